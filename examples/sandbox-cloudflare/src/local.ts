/**
 * `pnpm --filter @example/sandbox-cloudflare dev`: the example's Worker
 * (src/worker.ts, unchanged) in workerd under Miniflare, with the real
 * `@cloudflare/sandbox` Durable Object starting containers of the
 * repository's Cloudflare stand-in image on the local Docker engine
 * (`@testing/cloudflare-standin`: `wrangler dev` needs Node 22 and buildx).
 * The Claude Code binary installed with this example is mounted into each
 * container where an image would have it. Offline by default (the mock model
 * of offline-model.ts); with ANTHROPIC_API_KEY the agent calls the real API.
 * Prints the address to open, with this launch's token. `startLocal` is what
 * the tests start; run as a program, this module also handles Ctrl-C.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { CLOUDFLARE_IMAGE, cloudflareMissing, startCloudflareLab, type CloudflareLab } from '@testing/cloudflare-standin'
import { bridgeHostAddress } from '@testing/support/docker-engine'
import { bundleExampleWorker } from './bundle.js'
import { startOfflineModel, type OfflineModel } from './offline-model.js'

/** Where the CLI binary appears in each sandbox container (the Worker's CLAUDE_EXECUTABLE). */
const CONTAINER_CLI = '/opt/claude/claude'

/** Options of {@link startLocal}; the program reads them from the environment. */
export interface LocalOptions {
  /** The real API's key (`ANTHROPIC_API_KEY`). Unset: offline, against the mock model. */
  apiKey?: string
  /** With `apiKey`: where the agent sends model calls instead of Anthropic's API (`ANTHROPIC_BASE_URL`, a gateway). */
  apiBaseUrl?: string
  /** Offline: how long the sample's Bash step sleeps, seconds (`SANDBOX_CLOUDFLARE_STEP_SECONDS`). Default 3. */
  stepSeconds?: number
  /** Where the two start lines go. Default `console.log`. */
  print?: (line: string) => void
}

/** A running local Worker. */
export interface LocalApp {
  /** The Worker's address: on the Docker bridge, where the page, the API and the sandbox containers all reach it. */
  readonly url: URL
  /** This launch's bearer token (the Worker's RUN_TOKEN). */
  readonly token: string
  /** The address to open: `url` with `?token=`. */
  readonly openUrl: string
  /** The Miniflare lab the Worker runs in (its containers, its Miniflare). */
  readonly lab: CloudflareLab
  /** Stop Miniflare, remove every container it started, stop the mock model and remove the bundle. Safe to call twice. */
  close: () => Promise<void>
}

/** Something this machine lacks to run the Worker locally; the message names it and the command that fixes it. */
export class LocalSetupError extends Error {
  override readonly name = 'LocalSetupError'
}

/** The native `claude` binary of this example's `@anthropic-ai/claude-code` (linked there by its postinstall). */
export function claudeBinary(): string {
  const binary = join(dirname(createRequire(import.meta.url).resolve('@anthropic-ai/claude-code/package.json')), 'bin', 'claude.exe')
  if (!existsSync(binary)) throw new LocalSetupError(`The Claude Code binary is missing at ${binary}: run pnpm install (its postinstall links the native binary).`)
  return binary
}

/**
 * Start the Worker locally and print where to open it.
 * @param options - See {@link LocalOptions}.
 * @returns The running app; `close()` it when done.
 * @throws LocalSetupError when the Docker engine, its bridge, the stand-in image or the CLI binary is missing.
 * @example
 * ```ts
 * const app = await startLocal({ print: () => undefined })
 * await fetch(new URL('runs', app.url), { method: 'POST', headers: { authorization: `Bearer ${app.token}` }, body })
 * await app.close()
 * ```
 */
export async function startLocal(options: LocalOptions = {}): Promise<LocalApp> {
  const print = options.print ?? console.log
  const missing = await cloudflareMissing()
  if (missing !== undefined) throw new LocalSetupError(`Cannot run the Worker locally: ${missing}.`)
  const bridge = await bridgeHostAddress()
  if (bridge === undefined) {
    throw new LocalSetupError(
      "Cannot run the Worker locally: Docker's default bridge has no address on this machine (a remote engine, Docker Desktop or --bridge=none), " +
        'so a sandbox container could not reach the Worker (the tool bridge) or the mock model. Use a local Linux engine (scripts/docker/engine.sh).',
    )
  }
  const cli = claudeBinary()
  const token = randomBytes(32).toString('base64url')
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-cloudflare-'))
  let model: OfflineModel | undefined
  let lab: CloudflareLab | undefined
  const close = async (): Promise<void> => {
    try {
      await lab?.close()
    } finally {
      await model?.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }
  try {
    if (options.apiKey === undefined) model = await startOfflineModel({ host: bridge, stepSeconds: options.stepSeconds ?? 3 })
    const script = await bundleExampleWorker(join(dir, 'worker.js'))
    lab = await startCloudflareLab({
      script,
      bindings: {
        RUN_TOKEN: token,
        CLAUDE_MODEL: 'sonnet',
        CLAUDE_EXECUTABLE: CONTAINER_CLI,
        SANDBOX_LOG_LEVEL: 'error',
        ...(model
          ? { ANTHROPIC_API_KEY: model.apiKey, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}` }
          : { ANTHROPIC_API_KEY: options.apiKey!, ...(options.apiBaseUrl ? { ANTHROPIC_BASE_URL: options.apiBaseUrl } : {}) }),
      },
      mounts: [{ source: cli, target: CONTAINER_CLI, readOnly: true }],
      hostGateway: true,
      durableObjects: { Coordinator: 'Coordinator' },
    })
  } catch (error) {
    await close()
    throw error
  }
  // The lab listens on the bridge's address, so the address a browser opens is also the origin the agent's tool
  // bridge URL is made from (the Worker takes it from the trigger request), and the container reaches it.
  const url = lab.containerUrl!
  const openUrl = `${url.origin}/?token=${token}`
  print(`listening ${url.origin} (${model ? 'offline: the local mock model' : 'live: the Anthropic API'}; sandboxes from the stand-in image ${CLOUDFLARE_IMAGE})`)
  print(`open ${openUrl}`)
  let closing: Promise<void> | undefined
  return { url, token, openUrl, lab, close: () => (closing ??= close()) }
}

/** The program: settings from the environment, Ctrl-C or SIGTERM closes everything. */
async function main(): Promise<void> {
  const step = process.env.SANDBOX_CLOUDFLARE_STEP_SECONDS
  if (step !== undefined && !/^\d+(\.\d+)?$/.test(step)) throw new LocalSetupError(`SANDBOX_CLOUDFLARE_STEP_SECONDS must be a number of seconds, not ${JSON.stringify(step)}.`)
  const app = await startLocal({
    ...(process.env.ANTHROPIC_API_KEY ? { apiKey: process.env.ANTHROPIC_API_KEY } : {}),
    ...(process.env.ANTHROPIC_BASE_URL ? { apiBaseUrl: process.env.ANTHROPIC_BASE_URL } : {}),
    ...(step !== undefined ? { stepSeconds: Number(step) } : {}),
  })
  let stopping = false
  const shutdown = (): void => {
    if (stopping) return void process.exit(130) // a second Ctrl-C: leave at once
    stopping = true
    console.log('stopping: removing the sandbox containers (Ctrl-C again to leave at once)')
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error)
        process.exit(1)
      },
    )
  }
  // Miniflare's own exit hook ends the process on the first SIGINT or SIGTERM, with the containers still running;
  // this program closes the lab (which removes them) first, so it takes both signals over.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal)
    process.on(signal, shutdown)
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof LocalSetupError ? error.message : error)
    process.exitCode = 1
  })
}
