/**
 * What the browser suite starts: Debian's chromium through playwright-core
 * (installed by scripts/chromium/install.sh when missing; never a browser of
 * Playwright's own), the browser app built with vite, and the example's
 * server as its own process on a free port with a fresh data folder. Each
 * helper returns the way to stop what it started.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'

export const EXAMPLE_DIR = fileURLToPath(new URL('../..', import.meta.url))
const REPO_ROOT = join(EXAMPLE_DIR, '../..')
const CHROMIUM = '/usr/bin/chromium'

/** The flags of TESTING.md; playwright-core adds a fresh temporary --user-data-dir per launch itself (it refuses one in `args`). */
const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** Install chromium if it is missing (root and apt), then launch it headless. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) execFileSync(join(REPO_ROOT, 'scripts/chromium/install.sh'), { stdio: 'inherit', timeout: 300_000 })
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, timeout: 60_000 })
}

/** `vite build` of src/client into dist/client. */
export function buildClient(): void {
  execFileSync(process.execPath, [join(EXAMPLE_DIR, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], { cwd: EXAMPLE_DIR, stdio: 'inherit', timeout: 120_000 })
}

/** A running server of the example. */
export interface AppServer {
  readonly url: string
  readonly dataDir: string
  /** Everything it printed, for a failure message. */
  output: () => string
  stop: () => Promise<void>
}

/** Start `src/server/main.ts` offline on local-process, and wait for its `listening` line. */
export async function startServer(env: Record<string, string> = {}): Promise<AppServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sandbox-web-test-'))
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/server/main.ts'], {
    cwd: EXAMPLE_DIR,
    env: { ...process.env, ANTHROPIC_API_KEY: '', PORT: '0', SANDBOX_WEB_MODEL_PORT: '0', SANDBOX_WEB_DATA: dataDir, SANDBOX_WEB_STEP_SECONDS: '3', SANDBOX_WEB_REAP_EVERY_MS: '2000', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()))
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within 60 s:\n${output}`)), 60_000)
    const look = () => {
      const match = /listening (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    }
    child.stdout!.on('data', look)
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the server exited with ${code}:\n${output}`))
    })
  })
  return {
    url,
    dataDir,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))])
        if (child.exitCode === null) child.kill('SIGKILL')
      }
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** One chunk of the run log as the attach route serves it. */
export interface LogEvent {
  id: string | undefined
  chunk: { type: string; [field: string]: unknown }
}

/** The whole log of a finished run, read from the start (`?offset=-1`) with Node's fetch. */
export async function readRunLog(baseUrl: string, runId: string): Promise<LogEvent[]> {
  const response = await fetch(`${baseUrl}/api/run?runId=${encodeURIComponent(runId)}&offset=-1`, { signal: AbortSignal.timeout(60_000) })
  const text = await response.text()
  return text
    .split('\n\n')
    .filter((block) => block.includes('data:'))
    .map((block) => {
      const id = /^id: (.*)$/m.exec(block)?.[1]
      const data = block.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).join('\n')
      return { id, chunk: JSON.parse(data) as LogEvent['chunk'] }
    })
}
