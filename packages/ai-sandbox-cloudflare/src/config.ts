/**
 * `cloudflareSandbox()`'s configuration: the public type, its zod schema and
 * defaults. Owns every default the provider uses and the check that the
 * Durable Object binding is there before any call (a missing binding would
 * otherwise fail deep inside the SDK as a TypeError on `idFromName`).
 * Design notes: docs/design/cloudflare.md (section 11)
 */
import { envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { z } from 'zod'
import { BINDING_FIX, parseConfig } from './errors.js'

/** The workspace folder inside the container (the SDK's own default working folder). */
export const DEFAULT_WORKDIR = '/workspace'

/** Grace between SIGTERM and SIGKILL when a job is killed, in ms. */
export const DEFAULT_KILL_GRACE_MS = 2000

/**
 * Largest output (stdout and stderr together) `exec` returns, in bytes
 * (16 MiB). Kept below Workers RPC's 32 MiB cap on one value: the output
 * crosses it base64-encoded (4/3 of the bytes).
 */
export const DEFAULT_MAX_EXEC_OUTPUT_BYTES = 16 * 1024 * 1024

/**
 * Largest file `fs.read`/`fs.readBytes` return, in bytes (32 MiB). Bigger
 * reads are moved in chunks of {@link TRANSFER_CHUNK_BYTES}, but the whole
 * file is held in the Worker's memory (128 MB per isolate on Cloudflare).
 */
export const DEFAULT_MAX_READ_BYTES = 32 * 1024 * 1024

/** Upper bound of `maxReadBytes` (64 MiB): the Worker holds the whole file and its base64 pieces, within Cloudflare's 128 MB per isolate. */
export const MAX_READ_BYTES_LIMIT = 64 * 1024 * 1024

/** Bytes per `readFile`/`writeFile` call (12 MiB: 16 MiB of base64, half of Workers RPC's 32 MiB cap). */
export const TRANSFER_CHUNK_BYTES = 12 * 1024 * 1024

/**
 * How long the first call to a new or resumed sandbox may take before it
 * fails, in ms (60 s). The SDK itself retries a starting container for about
 * 150 s; this deadline answers first. Covers the container's cold start.
 */
export const DEFAULT_TIMEOUT_MS = 60_000

/** The Durable Object namespace of the `Sandbox` class, as far as the provider uses it. */
export interface SandboxNamespaceBinding {
  idFromName: (name: string) => unknown
  get: (id: never) => unknown
}

/** Configuration of {@link cloudflareSandbox}. */
export interface CloudflareSandboxConfig {
  /**
   * The Durable Object namespace bound to the SDK's `Sandbox` class, e.g.
   * `env.Sandbox` (wrangler `durable_objects.bindings`). Required. Name the
   * binding `Sandbox`: the SDK's `proxyToSandbox` (preview URLs) reads `env.Sandbox`.
   */
  binding: SandboxNamespaceBinding
  /** The workspace directory (`handle.workspaceRoot`); `/workspace/...` paths map onto it. Default {@link DEFAULT_WORKDIR}. */
  workdir?: string
  /**
   * The custom domain preview URLs live under (`exposePort`'s `hostname`),
   * e.g. `sandbox.example.com` (a wildcard route `*.sandbox.example.com/*` to the Worker),
   * or `localhost:8787` under `wrangler dev`. `*.workers.dev` cannot carry preview URLs.
   * Without it `ports` is false and `ports.connect` throws `UnsupportedCapabilityError`.
   */
  previewHostname?: string
  /**
   * Idle time before Cloudflare stops the container (and everything in it):
   * a number of seconds (not ms, unlike the other options), or a string such
   * as `'30m'` (`s`, `m`, `h`). At least 10 s (a
   * container starts in about 6 s; a shorter value stops it while it starts).
   * Default: the SDK's (10 minutes). Ignored with `keepAlive`.
   */
  sleepAfter?: number | string
  /** Never stop the container on idle; then `destroy()` is the only way it ends. Default `false`. */
  keepAlive?: boolean
  /** Environment every process gets, kept in a file inside the container (never in the Durable Object's memory or a command line). */
  env?: Record<string, string>
  /** Grace between SIGTERM and SIGKILL when a job is killed, in ms. Default {@link DEFAULT_KILL_GRACE_MS}. */
  killGraceMs?: number
  /** Largest `exec` output in bytes (stdout + stderr). Default {@link DEFAULT_MAX_EXEC_OUTPUT_BYTES}. */
  maxExecOutputBytes?: number
  /** Largest file `fs.read`/`fs.readBytes` return, in bytes, at most {@link MAX_READ_BYTES_LIMIT}. Default {@link DEFAULT_MAX_READ_BYTES}. */
  maxReadBytes?: number
  /** Bound on the first call to a new or resumed sandbox (the container start), and on the container check a handle makes after idling past `sleepAfter`, in ms. Default {@link DEFAULT_TIMEOUT_MS}. */
  timeoutMs?: number
}

/** The config with every default applied. */
export interface ResolvedCloudflareConfig {
  readonly binding: SandboxNamespaceBinding
  readonly workdir: string
  readonly previewHostname: string | undefined
  readonly sleepAfter: number | string | undefined
  readonly keepAlive: boolean
  readonly env: Readonly<Record<string, string>>
  readonly killGraceMs: number
  readonly maxExecOutputBytes: number
  readonly maxReadBytes: number
  readonly timeoutMs: number
}


const bindingSchema = z.custom<SandboxNamespaceBinding>(
  (value) => typeof value === 'object' && value !== null && typeof (value as SandboxNamespaceBinding).idFromName === 'function' && typeof (value as SandboxNamespaceBinding).get === 'function',
  { message: `expected a Durable Object namespace binding; ${BINDING_FIX} (a misspelt env key gives undefined)` },
)

const HOSTNAME = /^(?=.{1,253}(:|$))[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$/

const configSchema = z
  .object({
    binding: bindingSchema,
    workdir: z
      .string()
      .transform((path) => (path.length > 1 ? path.replace(/\/+$/, '') : path))
      .refine((path) => /^\/[^\0]*$/.test(path) && !path.split('/').some((part) => part === '.' || part === '..'), 'expected an absolute path without . or .. parts, e.g. /workspace')
      .refine((path) => !/^\/(bin|boot|dev|etc|lib\w*|proc|root|run|sbin|sys|usr|var|tmp)?$/.test(path), 'expected a folder of its own (e.g. /workspace), not / or a system folder')
      .optional(),
    previewHostname: z
      .string()
      .transform((host) => host.toLowerCase())
      .refine((host) => HOSTNAME.test(host), 'expected a bare hostname (optionally with a port), e.g. sandbox.example.com or localhost:8787, without scheme or path')
      .refine((host) => !/(^|\.)workers\.dev(:\d+)?$/.test(host), 'workers.dev cannot carry preview URLs (they need a wildcard subdomain); use a custom domain with a *.<domain>/* route to the Worker')
      .optional(),
    sleepAfter: z
      .union([z.number(), z.string()])
      .refine((value) => secondsOf(value) !== undefined, 'expected seconds (a number) or a string such as "90s", "30m" or "1h"')
      .refine((value) => (secondsOf(value) ?? 0) >= 10, 'expected at least 10 seconds: a container takes about 6 s to start, and a shorter idle time stops it while it starts')
      .optional(),
    keepAlive: z.boolean().optional(),
    env: envVarsSchema.optional(),
    killGraceMs: z.number().int().min(0).optional(),
    maxExecOutputBytes: z.number().int().positive().max(20 * 1024 * 1024, 'at most 20 MiB: the output crosses Workers RPC base64-encoded, which caps one value at 32 MiB').optional(),
    maxReadBytes: z.number().int().positive().max(MAX_READ_BYTES_LIMIT, 'at most 64 MiB: the Worker holds the whole file (and its base64 pieces) in memory, 128 MB per isolate; read bigger files in parts with exec (e.g. dd or split)').optional(),
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict()

/** The SDK's idle time before a container sleeps when `sleepAfter` is not given (10 minutes), in seconds. */
export const SDK_SLEEP_AFTER_SECONDS = 600

/** How long a sandbox may sit idle before Cloudflare may have stopped its container, in ms (`sleepAfter`, else the SDK's 10 minutes). */
export function idleLimitMs(config: ResolvedCloudflareConfig): number {
  return (config.sleepAfter === undefined ? SDK_SLEEP_AFTER_SECONDS : (secondsOf(config.sleepAfter) ?? SDK_SLEEP_AFTER_SECONDS)) * 1000
}

/** Seconds of a `sleepAfter` value, or `undefined` when malformed. */
function secondsOf(value: number | string): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? value : undefined
  const match = /^(\d+)([smh])$/.exec(value)
  if (!match) return undefined
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[match[2] as 's' | 'm' | 'h']
}

/**
 * Validate `config` and apply the defaults.
 * @throws SandboxConfigError naming the field (e.g. `cloudflareSandbox.binding` when the binding is missing or not a Durable Object namespace).
 */
export function resolveConfig(config: CloudflareSandboxConfig): ResolvedCloudflareConfig {
  const parsed = parseConfig(configSchema, config ?? {}, '')
  return {
    binding: parsed.binding,
    workdir: parsed.workdir ?? DEFAULT_WORKDIR,
    previewHostname: parsed.previewHostname,
    sleepAfter: parsed.sleepAfter,
    keepAlive: parsed.keepAlive ?? false,
    env: parsed.env ?? {},
    killGraceMs: parsed.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    maxExecOutputBytes: parsed.maxExecOutputBytes ?? DEFAULT_MAX_EXEC_OUTPUT_BYTES,
    maxReadBytes: parsed.maxReadBytes ?? DEFAULT_MAX_READ_BYTES,
    timeoutMs: parsed.timeoutMs ?? DEFAULT_TIMEOUT_MS,
  }
}

/** A stable fingerprint of what decides what a sandbox is (never the binding object or the env). */
export function fingerprintOf(config: ResolvedCloudflareConfig): string {
  return `cloudflare:${config.workdir}`
}
