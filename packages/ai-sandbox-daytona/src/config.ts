/**
 * `daytonaSandbox()`'s configuration: the public type, its zod schema and
 * defaults, and the SDK client built from it. Owns every default the
 * provider uses. The API key is read here once and never stored elsewhere.
 * Design notes: docs/design/daytona.md (section 11)
 */
import { Daytona } from '@daytona/sdk'
import { z } from 'zod'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { parseConfig } from './errors.js'
import { isProviderLabel } from './labels.js'

/** Daytona's own image workdir, onto which `/workspace` paths map. Source: spec 000 "Providers". */
export const DEFAULT_WORKDIR = '/home/daytona/workspace'

/** Where the SDK sends requests when neither `apiUrl` nor `DAYTONA_API_URL` is set (Daytona's cloud). */
export const DEFAULT_API_URL = 'https://app.daytona.io/api'

/** Grace between SIGTERM and SIGKILL when a job is killed, in ms. */
export const DEFAULT_KILL_GRACE_MS = 2000

/** Largest output (stdout and stderr together) `exec` returns, in bytes (64 MiB). */
export const DEFAULT_MAX_EXEC_OUTPUT_BYTES = 64 * 1024 * 1024

/** Largest file `fs.read`/`fs.readBytes` return, in bytes (64 MiB). */
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024

/** How long create, start and snapshot may take before they fail, in ms (an archived sandbox can take minutes to start). */
export const DEFAULT_TIMEOUT_MS = 300_000

/** Configuration of {@link daytonaSandbox}. */
export interface DaytonaSandboxConfig {
  /** API key. Default: the `DAYTONA_API_KEY` environment variable; one of the two is required. */
  apiKey?: string
  /** Daytona API URL. Default: `DAYTONA_API_URL`, else {@link DEFAULT_API_URL}. */
  apiUrl?: string
  /** Region (Daytona's `target`, e.g. `us`, `eu`). Default: the organization's default. */
  target?: string
  /** Snapshot new sandboxes start from. Default: Daytona's default snapshot. */
  snapshot?: string
  /** Minutes of inactivity before Daytona stops a sandbox (0 = never). Default: Daytona's (15). */
  autoStopInterval?: number
  /** Delete the sandbox as soon as it stops (Daytona's `autoDeleteInterval: 0`). Default `false`. */
  ephemeral?: boolean
  /** The workspace directory (`handle.workspaceRoot`); `/workspace/...` paths map onto it. Default {@link DEFAULT_WORKDIR}. */
  workdir?: string
  /** Block all outbound network at create (what a policy with `capabilities: { network: false }` needs). Default `false`. */
  networkBlockAll?: boolean
  /** CIDR ranges still reachable when the network is otherwise limited, e.g. `['10.0.0.0/8']`. */
  networkAllowList?: string[]
  /** Environment every process gets, kept in a file inside the sandbox (never sent to Daytona's API). */
  env?: Record<string, string>
  /** Labels on every sandbox (Daytona labels), besides the provider's own. */
  labels?: Record<string, string>
  /** Grace between SIGTERM and SIGKILL when a job is killed, in ms. Default {@link DEFAULT_KILL_GRACE_MS}. */
  killGraceMs?: number
  /** Largest `exec` output in bytes (stdout + stderr). Default {@link DEFAULT_MAX_EXEC_OUTPUT_BYTES}. */
  maxExecOutputBytes?: number
  /** Largest file `fs.read`/`fs.readBytes` return, in bytes. Default {@link DEFAULT_MAX_READ_BYTES}. */
  maxReadBytes?: number
  /** Bound on create, start, snapshot and fork, in ms. Default {@link DEFAULT_TIMEOUT_MS}. */
  timeoutMs?: number
}

/** The config with every default applied. */
export interface ResolvedDaytonaConfig {
  readonly apiKey: string
  readonly apiUrl: string
  readonly target: string | undefined
  readonly snapshot: string | undefined
  readonly autoStopInterval: number | undefined
  readonly ephemeral: boolean
  readonly workdir: string
  readonly networkBlockAll: boolean
  readonly networkAllowList: readonly string[] | undefined
  readonly env: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
  readonly killGraceMs: number
  readonly maxExecOutputBytes: number
  readonly maxReadBytes: number
  readonly timeoutMs: number
}

const CIDR = /^[0-9a-fA-F:.]+\/\d{1,3}$/

const configSchema = z
  .object({
    apiKey: z.string().trim().min(1, 'the API key is empty; pass the key from the Daytona dashboard').optional(),
    apiUrl: z.url({ protocol: /^https?$/, message: 'expected an http(s) URL such as https://app.daytona.io/api' }).optional(),
    target: z.string().min(1).optional(),
    snapshot: z.string().min(1).optional(),
    autoStopInterval: z.number().int('expected whole minutes').min(0, 'expected minutes >= 0 (0 disables auto-stop)').optional(),
    ephemeral: z.boolean().optional(),
    workdir: z
      .string()
      .transform((path) => (path.length > 1 ? path.replace(/\/+$/, '') : path))
      .refine((path) => /^\/[^\0]*$/.test(path) && !path.split('/').some((part) => part === '.' || part === '..'), 'expected an absolute path without . or .. parts, e.g. /home/daytona/workspace')
      .refine((path) => !/^\/(bin|boot|dev|etc|lib\w*|proc|root|run|sbin|sys|usr|var)?$/.test(path), 'expected a folder of its own (e.g. /home/daytona/workspace), not / or a system folder: the provider makes it the sandbox user\'s')
      .optional(),
    networkBlockAll: z.boolean().optional(),
    networkAllowList: z.array(z.string().regex(CIDR, 'expected CIDR ranges such as 10.0.0.0/8')).optional(),
    env: envVarsSchema.optional(),
    labels: z
      .record(z.string().min(1), z.string())
      .refine((labels) => !Object.keys(labels).some(isProviderLabel), 'tanstack.sandbox, tanstack.sandbox.origin and tanstack.sandbox.journal-secret are set by the provider; use other keys')
      .optional(),
    killGraceMs: z.number().int().min(0).optional(),
    maxExecOutputBytes: z.number().int().positive().optional(),
    maxReadBytes: z.number().int().positive().optional(),
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict()

/**
 * Validate `config` and apply the defaults.
 * @throws SandboxConfigError naming the field (e.g. `daytonaSandbox.apiKey` when neither it nor `DAYTONA_API_KEY` is set).
 */
export function resolveConfig(config: DaytonaSandboxConfig = {}): ResolvedDaytonaConfig {
  const parsed = parseConfig(configSchema, config, '')
  const apiKey = parsed.apiKey ?? process.env.DAYTONA_API_KEY
  if (!apiKey) {
    throw new SandboxConfigError('daytonaSandbox.apiKey', 'Invalid option daytonaSandbox.apiKey: no API key. Pass daytonaSandbox({ apiKey }) or set DAYTONA_API_KEY (create one in the Daytona dashboard under Keys).')
  }
  return {
    apiKey,
    apiUrl: parsed.apiUrl ?? process.env.DAYTONA_API_URL ?? DEFAULT_API_URL,
    target: parsed.target,
    snapshot: parsed.snapshot,
    autoStopInterval: parsed.autoStopInterval,
    ephemeral: parsed.ephemeral ?? false,
    workdir: parsed.workdir ?? DEFAULT_WORKDIR,
    networkBlockAll: parsed.networkBlockAll ?? false,
    networkAllowList: parsed.networkAllowList,
    env: parsed.env ?? {},
    labels: parsed.labels ?? {},
    killGraceMs: parsed.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    maxExecOutputBytes: parsed.maxExecOutputBytes ?? DEFAULT_MAX_EXEC_OUTPUT_BYTES,
    maxReadBytes: parsed.maxReadBytes ?? DEFAULT_MAX_READ_BYTES,
    timeoutMs: parsed.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  }
}

/**
 * The SDK client for a resolved config. `apiUrl` is always passed (the SDK
 * otherwise reads `.env` files from the app's working directory), and state
 * waits poll instead of opening the socket.io event channel (docs/design/daytona.md section 9).
 */
export function daytonaClient(config: ResolvedDaytonaConfig): Daytona {
  return new Daytona({ apiKey: config.apiKey, apiUrl: config.apiUrl, ...(config.target ? { target: config.target } : {}), useDeprecatedPolling: true })
}

/** A stable fingerprint of what decides where sandboxes live (the API and target, never the key). */
export function fingerprintOf(config: ResolvedDaytonaConfig): string {
  return `daytona:${config.apiUrl}:${config.target ?? ''}:${config.snapshot ?? ''}:${config.workdir}`
}
