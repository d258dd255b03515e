/**
 * The server's settings, from the command line and the environment, with the
 * defaults `pnpm dev` runs on. Owns parsing and validation only; nothing is
 * started here (the access token is made here when `SANDBOX_WEB_TOKEN` is
 * unset). Invariant: offline (the local mock model) unless
 * `ANTHROPIC_API_KEY` is set, and local-process unless `--docker` is given.
 */
import { randomBytes } from 'node:crypto'
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
  /**
   * The access token every API request must carry (`Authorization: Bearer …`): `SANDBOX_WEB_TOKEN` when set
   * (32 to 512 characters of `A-Z a-z 0-9 . _ ~ -`), else 32 random bytes made at start. Printed on start in the
   * URL the developer opens.
   */
  readonly accessToken: string
  /** How many runs one client (one credential) may have live at once (`SANDBOX_WEB_MAX_RUNS`, default 2). */
  readonly maxRunsPerClient: number
  /** How many runs the server has live at once, all clients together (`SANDBOX_WEB_MAX_RUNS_TOTAL`, default 4). */
  readonly maxRunsTotal: number
}

/** What `SANDBOX_WEB_TOKEN` must look like: too long to guess, and safe as it is in a URL and in a header. */
export const TOKEN_PATTERN = /^[A-Za-z0-9._~-]{32,512}$/

const here = fileURLToPath(new URL('.', import.meta.url))

function numberFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name}=${raw}: expected a non-negative number.`)
  return value
}

/** A cap: a whole number of 1 or more (unset or empty: `fallback`). */
function capFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1) throw new RangeError(`${name}=${raw}: expected a whole number of runs, 1 or more (unset: ${fallback}).`)
  return Number(raw)
}

/**
 * The access token: `SANDBOX_WEB_TOKEN` when set, checked against {@link TOKEN_PATTERN}, else a fresh random one.
 * @throws RangeError naming the variable (without echoing its value) when it is too short or has other characters.
 */
function tokenFrom(env: NodeJS.ProcessEnv): string {
  const raw = env.SANDBOX_WEB_TOKEN
  if (raw === undefined || raw === '') return randomBytes(32).toString('base64url')
  if (TOKEN_PATTERN.test(raw)) return raw
  const problem = raw.length < 32 || raw.length > 512 ? `is ${raw.length} characters long` : 'has a character outside A-Z a-z 0-9 . _ ~ -'
  throw new RangeError(`SANDBOX_WEB_TOKEN ${problem}: set it to 32 to 512 of A-Z a-z 0-9 . _ ~ - (for example \`openssl rand -hex 32\`), or unset it to get a new random token on each start.`)
}

/**
 * Read the settings.
 * @param argv - The arguments after the script (`--docker`, `--help`).
 * @param env - The environment to read (default `process.env`).
 * @throws RangeError naming the variable when a number, a cap or `SANDBOX_WEB_TOKEN` is malformed.
 */
export function readConfig(argv: readonly string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const docker = argv.includes('--docker') || env.SANDBOX_WEB_PROVIDER === 'docker'
  return {
    port: numberFrom(env, 'PORT', 5180),
    dataDir: resolve(env.SANDBOX_WEB_DATA ?? resolve(here, '../../.data')),
    clientDir: resolve(here, '../../dist/client'),
    provider: docker ? 'docker' : 'local-process',
    image: env.SANDBOX_WEB_IMAGE ?? 'tanstack-sandbox-debian:bookworm',
    apiKey: env.ANTHROPIC_API_KEY || undefined,
    apiBaseUrl: env.ANTHROPIC_API_KEY ? env.ANTHROPIC_BASE_URL || undefined : undefined,
    modelPort: numberFrom(env, 'SANDBOX_WEB_MODEL_PORT', 5181),
    stepSeconds: numberFrom(env, 'SANDBOX_WEB_STEP_SECONDS', 2),
    reapEveryMs: numberFrom(env, 'SANDBOX_WEB_REAP_EVERY_MS', 30_000),
    detachedTtlMs: numberFrom(env, 'SANDBOX_WEB_DETACHED_TTL_MS', 30 * 60_000),
    keepFailedMs: numberFrom(env, 'SANDBOX_WEB_KEEP_FAILED_MS', 120_000),
    leaseMs: 3000,
    fenceQuietMs: 1500,
    cancelPollMs: 500,
    accessToken: tokenFrom(env),
    maxRunsPerClient: capFrom(env, 'SANDBOX_WEB_MAX_RUNS', 2),
    maxRunsTotal: capFrom(env, 'SANDBOX_WEB_MAX_RUNS_TOTAL', 4),
  }
}
