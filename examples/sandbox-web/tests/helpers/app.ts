/**
 * What the browser suite starts: Debian's chromium through playwright-core
 * (installed by scripts/chromium/install.sh when missing; never a browser of
 * Playwright's own), the browser app built with vite, and the example's
 * server as its own process on a free port with a fresh data folder. Each
 * helper returns the way to stop what it started. The server's access token
 * is read from its start line; `server.api` sends it on every call, and
 * `rawRequest` sends a path and headers exactly as written.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'
import { describe, expect, it } from 'vitest'
import { sseMessages, type SseMessage } from '@testing/support/sse-client'

export const EXAMPLE_DIR = fileURLToPath(new URL('../..', import.meta.url))
const REPO_ROOT = join(EXAMPLE_DIR, '../..')
const CHROMIUM = '/usr/bin/chromium'
/** The image `--docker` runs (the server's default), built by scripts/docker/images.sh. */
export const DOCKER_IMAGE = 'tanstack-sandbox-debian:bookworm'

/** The flags of TESTING.md; playwright-core adds a fresh temporary --user-data-dir per launch itself (it refuses one in `args`). */
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/**
 * What a suite needs that this machine lacks, or `null`: chromium (or root and apt to install it), and with
 * `docker` the engine and the Debian image.
 */
export function missingParts({ docker = false }: { docker?: boolean } = {}): string | null {
  if (!existsSync(CHROMIUM) && !(process.getuid?.() === 0 && existsSync('/usr/bin/apt-get'))) {
    return `chromium is not at ${CHROMIUM} and cannot be installed here (scripts/chromium/install.sh needs root and apt)`
  }
  if (docker) {
    try {
      execFileSync('docker', ['image', 'inspect', DOCKER_IMAGE], { stdio: 'ignore', timeout: 15_000 })
    } catch {
      return `no Docker engine with the image ${DOCKER_IMAGE} (start it with scripts/docker/engine.sh, build it with scripts/docker/images.sh)`
    }
  }
  return null
}

/**
 * Register `suite`, or when a part is missing one test that names it: skipped, or failing under
 * REQUIRE_CHROMIUM=1 (and REQUIRE_DOCKER=1 for a Docker suite), as CI sets them.
 */
export function describeInBrowser(name: string, options: { docker?: boolean }, suite: () => void): void {
  const missing = missingParts(options)
  if (missing === null) return void describe(name, suite)
  const required = process.env.REQUIRE_CHROMIUM === '1' || (options.docker === true && process.env.REQUIRE_DOCKER === '1')
  describe(name, () => {
    if (required) it(`needs its parts (REQUIRE_CHROMIUM / REQUIRE_DOCKER): ${missing}`, () => expect.fail(missing))
    else it.skip(`skipped: ${missing}`, () => undefined)
  })
}

/** Install chromium if it is missing (root and apt), then launch it headless. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) execFileSync(join(REPO_ROOT, 'scripts/chromium/install.sh'), { stdio: 'inherit', timeout: 300_000 })
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, timeout: 60_000 })
}

/** A running server of the example. */
export interface AppServer {
  readonly url: string
  /** The launch's access token, from the `open http://127.0.0.1:<port>/?token=…` line it printed. */
  readonly token: string
  readonly dataDir: string
  /** `fetch(url + path, init)` with `Authorization: Bearer <token>` added (the caller's headers are kept). */
  api: (path: string, init?: RequestInit) => Promise<Response>
  /** Everything it printed, for a failure message. */
  output: () => string
  /** SIGTERM (SIGKILL after 5 s); the data folder is removed unless `keepData`, e.g. for the next server on it. */
  stop: (options?: { keepData?: boolean }) => Promise<void>
}

/** Where and how a test server runs. */
export interface ServerOptions {
  /** Extra environment (SANDBOX_WEB_*, ANTHROPIC_*, PORT). */
  env?: Record<string, string>
  /** Reuse this data folder (a restarted server); default: a fresh temporary one. */
  dataDir?: string
  /** Add `--docker`. */
  docker?: boolean
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Start `src/server/main.ts` (offline, local-process unless told otherwise), and wait for its `listening` and `open` lines. */
export async function startServer(options: ServerOptions = {}): Promise<AppServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'sandbox-web-test-'))
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts', ...(options.docker ? ['--docker'] : [])], {
    cwd: EXAMPLE_DIR,
    // The access settings cleared (empty is unset) so the caller's shell cannot change them; a test sets its own.
    env: { ...process.env, SANDBOX_WEB_TOKEN: '', SANDBOX_WEB_MAX_RUNS: '', SANDBOX_WEB_MAX_RUNS_TOTAL: '', ANTHROPIC_API_KEY: '', PORT: '0', SANDBOX_WEB_MODEL_PORT: '0', SANDBOX_WEB_DATA: dataDir, SANDBOX_WEB_STEP_SECONDS: '3', SANDBOX_WEB_REAP_EVERY_MS: '2000', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  const { url, token } = await new Promise<{ url: string; token: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within 60 s:\n${output}`)), 60_000)
    const look = () => {
      const listening = /listening (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      const open = /^open (http:\/\/127\.0\.0\.1:\d+)\/\?token=([A-Za-z0-9._~-]+)/m.exec(output)
      if (listening && open) {
        clearTimeout(timer)
        if (open[1] !== listening[1]) reject(new Error(`the server printed two addresses:\n${output}`))
        resolve({ url: listening[1]!, token: open[2]! })
      }
    }
    child.stdout!.on('data', look)
    // 'close', not 'exit': by then everything it printed is in `output`, for the message.
    child.once('close', (code) => {
      clearTimeout(timer)
      reject(new Error(`the server exited with ${code}:\n${output}`))
    })
  })
  return {
    url,
    token,
    dataDir,
    api: (path, init = {}) => {
      const headers = new Headers(init.headers)
      headers.set('authorization', `Bearer ${token}`)
      return fetch(`${url}${path}`, { ...init, headers })
    },
    output: () => output,
    stop: async ({ keepData = false } = {}) => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 8000))])
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      }
      if (!keepData) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** A request with exactly this path and these headers (fetch resolves `..` and will not send a foreign `Host`); the body read whole. */
export function rawRequest(server: Pick<AppServer, 'url'>, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(server.url)
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: hostname, port, path, method: options.method ?? 'GET', headers: options.headers, agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (data: string) => (body += data))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
    })
    request.on('error', reject)
    request.end(options.body)
  })
}

/** One chunk of the run log as the attach route serves it. */
export interface LogEvent {
  id: string | undefined
  chunk: { type: string; [field: string]: unknown }
}

/** The whole log of a finished run, read from the start (`?offset=-1`) with Node's fetch and the server's token. */
export async function readRunLog(server: Pick<AppServer, 'api'>, runId: string): Promise<LogEvent[]> {
  const response = await server.api(`/api/run?runId=${encodeURIComponent(runId)}&offset=-1`, { signal: AbortSignal.timeout(60_000) })
  if (!response.ok) throw new Error(`reading the log of ${runId}: ${response.status} ${await response.text()}`)
  const log: LogEvent[] = []
  for await (const { id, data } of sseMessages(response.body!)) log.push({ id, chunk: JSON.parse(data) as LogEvent['chunk'] })
  return log
}

/**
 * `POST /api/run?runId=…` as the page sends it: the token, this server's own `Origin`, a JSON body. Resolves when the
 * response's headers arrive (a started run streams on).
 */
export function startRunOverApi(server: Pick<AppServer, 'api' | 'url'>, runId: string, threadId: string, prompt: string, signal?: AbortSignal): Promise<Response> {
  return server.api(`/api/run?runId=${encodeURIComponent(runId)}`, { method: 'POST', headers: { origin: server.url, 'content-type': 'application/json' }, body: JSON.stringify({ threadId, prompt }), ...(signal ? { signal } : {}) })
}

/** An SSE response read part way: the messages until the one with the marker, and the way to read the rest to its end. */
export interface PartlyRead {
  readonly messages: readonly SseMessage[]
  rest: () => Promise<SseMessage[]>
}

/** Read `response`'s SSE messages until one's data has `marker` in it; throws when the body ends first. */
export async function readUntil(response: Response, marker: string): Promise<PartlyRead> {
  const stream = sseMessages(response.body!)
  const messages: SseMessage[] = []
  while (!messages.at(-1)?.data.includes(marker)) {
    const next = await stream.next()
    if (next.done) throw new Error(`the stream ended before ${marker}:\n${messages.map((message) => message.data).join('\n')}`)
    messages.push(next.value)
  }
  return {
    messages,
    rest: async () => {
      const more: SseMessage[] = []
      for await (const message of stream) more.push(message)
      return more
    },
  }
}
