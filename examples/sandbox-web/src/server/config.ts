/**
 * The server's settings, from the command line and the environment, with the
 * defaults `pnpm dev` runs on. Owns parsing and validation only; nothing is
 * started here. Invariant: offline (the local mock model) unless
 * `ANTHROPIC_API_KEY` is set, and local-process unless `--docker` is given.
 */
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** Everything `main.ts` needs to start the app. */
export interface ServerConfig {
  /** TCP port on 127.0.0.1 (`PORT`, default 5180; 0 picks a free one). */
  readonly port: number
  /** Folder of the SQLite file, the sample repository, the sandboxes and the prompts (`SANDBOX_WEB_DATA`, default `examples/sandbox-web/.data`). */
  readonly dataDir: string
  /** The built browser app (`vite build`). */
  readonly clientDir: string
  /** `local-process` (default) or `docker` (`--docker`, or `SANDBOX_WEB_PROVIDER=docker`). */
  readonly provider: 'local-process' | 'docker'
  /** The Docker image (`SANDBOX_WEB_IMAGE`, default `tanstack-sandbox-debian:bookworm`, built by scripts/docker/images.sh). */
  readonly image: string
  /** The real API key: set means live mode, unset means the local mock model. */
  readonly apiKey: string | undefined
  /** Live mode only: where Claude Code sends its model calls (`ANTHROPIC_BASE_URL`, e.g. a gateway); unset: Anthropic's API. */
  readonly apiBaseUrl: string | undefined
  /** The offline model's port (`SANDBOX_WEB_MODEL_PORT`, default 5181; 0 picks a free one). Fixed, so a restarted server's mock is where a running agent expects it. */
  readonly modelPort: number
  /** Seconds each scripted step sleeps in offline mode (`SANDBOX_WEB_STEP_SECONDS`, default 2), so a run lasts long enough to refresh or stop. */
  readonly stepSeconds: number
  /** How often the reaper sweeps, ms (`SANDBOX_WEB_REAP_EVERY_MS`, default 30 000). */
  readonly reapEveryMs: number
  /** After how long a detached run nobody rejoined is expired, ms (`SANDBOX_WEB_DETACHED_TTL_MS`, default 30 min). */
  readonly detachedTtlMs: number
  /** How long a sandbox kept after a failed run waits, idle, before it is destroyed, ms (`SANDBOX_WEB_KEEP_FAILED_MS`, default 2 min): time to look inside it, and no sandbox left behind for good. */
  readonly keepFailedMs: number
  /** The SQLite lock lease, ms (default 3000): how soon a run of a killed server can be taken over. */
  readonly leaseMs: number
  /** The takeover's quiet window, ms (default 1500, above the lease renewal `leaseMs / 3`). */
  readonly fenceQuietMs: number
  /** How often a live run re-reads its record for a cancel from another process, ms (default 500). */
  readonly cancelPollMs: number
}

const here = fileURLToPath(new URL('.', import.meta.url))

function numberFrom(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name}=${raw}: expected a non-negative number.`)
  return value
}

/**
 * Read the settings.
 * @param argv - The arguments after the script (`--docker`, `--help`).
 * @throws RangeError naming the variable when a number is malformed.
 */
export function readConfig(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const docker = argv.includes('--docker') || env.SANDBOX_WEB_PROVIDER === 'docker'
  return {
    port: numberFrom('PORT', 5180),
    dataDir: resolve(env.SANDBOX_WEB_DATA ?? resolve(here, '../../.data')),
    clientDir: resolve(here, '../../dist/client'),
    provider: docker ? 'docker' : 'local-process',
    image: env.SANDBOX_WEB_IMAGE ?? 'tanstack-sandbox-debian:bookworm',
    apiKey: env.ANTHROPIC_API_KEY || undefined,
    apiBaseUrl: env.ANTHROPIC_API_KEY ? env.ANTHROPIC_BASE_URL || undefined : undefined,
    modelPort: numberFrom('SANDBOX_WEB_MODEL_PORT', 5181),
    stepSeconds: numberFrom('SANDBOX_WEB_STEP_SECONDS', 2),
    reapEveryMs: numberFrom('SANDBOX_WEB_REAP_EVERY_MS', 30_000),
    detachedTtlMs: numberFrom('SANDBOX_WEB_DETACHED_TTL_MS', 30 * 60_000),
    keepFailedMs: numberFrom('SANDBOX_WEB_KEEP_FAILED_MS', 120_000),
    leaseMs: 3000,
    fenceQuietMs: 1500,
    cancelPollMs: 500,
  }
}
