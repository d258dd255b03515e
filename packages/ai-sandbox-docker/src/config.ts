/**
 * The configuration of `dockerSandbox()`: its public type, the zod schema that
 * is the single source of validation messages, and the defaults. Pure: no
 * engine calls. Invariant: everything downstream reads the parsed, defaulted
 * {@link ResolvedDockerConfig}, never the caller's object.
 */
import { createHash } from 'node:crypto'
import type Docker from 'dockerode'
import { z } from 'zod'
import { parseConfig } from './errors.js'
import { envSchema } from './state.js'

/** A host path bind-mounted into every sandbox container. */
export interface DockerSandboxMount {
  /** Absolute path on the Docker host (a file or a directory). */
  source: string
  /** Absolute path inside the container. */
  target: string
  /** Mount read-only. Default `false`. */
  readOnly?: boolean
}

/** Resource limits of every sandbox container. */
export interface DockerSandboxResources {
  /** Memory limit: bytes, or a string with a unit (`'512m'`, `'2g'`). Minimum 6 MB. */
  memory?: number | string
  /** CPU limit in cores, e.g. `1.5`. */
  cpus?: number
  /** Maximum number of processes (and threads) in the container. */
  pids?: number
}

/** Options of {@link dockerSandbox}. */
export interface DockerSandboxConfig {
  /** Image to start sandboxes from, e.g. `tanstack-sandbox-debian:bookworm`. Must exist on the engine (never pulled). */
  image: string
  /** User processes and fs calls run as: a name from the image or `uid[:gid]`. Default: the image's user. */
  user?: string
  /**
   * `'bridge'` (default: the default bridge, with `host.docker.internal`
   * pointing at the host), `'none'` (no network: the sandbox cannot reach
   * anything, and `ports` is off), `'host'`, or the name of a user-defined network.
   */
  network?: 'bridge' | 'none' | 'host' | (string & {})
  /** Memory, CPU and process limits. Default: none. */
  resources?: DockerSandboxResources
  /** A dockerode instance, or its constructor options (`{ socketPath }`, `{ host, port }`). Default: `DOCKER_HOST` or `/var/run/docker.sock`. */
  docker?: Docker | Docker.DockerOptions
  /** Environment of every process in every sandbox (create-time `env` is merged over it). */
  env?: Record<string, string>
  /** Extra Docker labels on every container (the provider's own `tanstack.sandbox*` keys always win). */
  labels?: Record<string, string>
  /** Workspace directory inside the container, owned by `user`. Default `/workspace`. */
  workspaceDir?: string
  /** Host paths bind-mounted into every container (not part of snapshots). */
  mounts?: DockerSandboxMount[]
  /** More `/etc/hosts` entries, `name:ip` or `name:host-gateway`. Ignored with `network: 'none'`. */
  extraHosts?: string[]
  /** Container TCP ports published on the host's 127.0.0.1 (random host port); `ports.connect` prefers them. */
  publishPorts?: number[]
  /** ms between the first signal of `kill()` and SIGKILL. Default 2000. */
  killGraceMs?: number
  /** Output (stdout plus stderr) above which `exec` kills the command and throws. Default 64 MiB. */
  maxExecOutputBytes?: number
}

/** The parsed config with every default filled in. */
export interface ResolvedDockerConfig {
  readonly image: string
  readonly user: string | undefined
  readonly network: string
  readonly resources: { memory?: number; cpus?: number; pids?: number }
  readonly env: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
  readonly workspaceDir: string
  readonly mounts: readonly Required<DockerSandboxMount>[]
  readonly extraHosts: readonly string[]
  readonly publishPorts: readonly number[]
  readonly killGraceMs: number
  readonly maxExecOutputBytes: number
}

/** Default grace period between SIGTERM and SIGKILL, in ms. */
export const DEFAULT_KILL_GRACE_MS = 2000
/** Default exec output limit, in bytes (64 MiB). */
export const DEFAULT_MAX_EXEC_OUTPUT_BYTES = 64 * 1024 * 1024
/** Default workspace directory. */
export const DEFAULT_WORKSPACE_DIR = '/workspace'

const absolutePath = (what: string) =>
  z
    .string()
    .min(1, `expected an absolute ${what}`)
    .refine((value) => value.startsWith('/'), `expected an absolute ${what} (starting with "/")`)
    .refine((value) => !value.includes('\0') && !value.includes('\n'), `${what} must not contain NUL or newlines`)

const MEMORY = /^(\d+(?:\.\d+)?)\s*([kmgt]?)b?$/i
const UNITS: Readonly<Record<string, number>> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }

const memorySchema = z
  .union([z.number().int('expected whole bytes').positive(), z.string().regex(MEMORY, "expected bytes or a size like '512m' or '2g'")])
  .transform((value) => {
    if (typeof value === 'number') return value
    const [, amount, unit] = MEMORY.exec(value)!
    return Math.floor(Number(amount) * UNITS[unit!.toLowerCase()]!)
  })
  .refine((bytes) => bytes >= 6 * 1024 * 1024, 'the Docker engine needs at least 6 MB (6m)')

const labelsSchema = z.record(z.string().min(1), z.string())

const port = z.number().int('expected an integer port').min(1).max(65535)

const configSchema = z
  .object({
    image: z.string().trim().min(1, "expected an image name such as 'tanstack-sandbox-debian:bookworm'"),
    user: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/, "expected a user name or 'uid[:gid]', e.g. '1000:1000'").optional(),
    network: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "expected 'bridge', 'none', 'host' or a network name").optional(),
    resources: z
      .object({
        memory: memorySchema.optional(),
        cpus: z.number().positive('expected a positive number of CPUs').max(1024).optional(),
        pids: z.number().int('expected a whole number of processes').min(1).optional(),
      })
      .strict()
      .optional(),
    docker: z.custom<Docker | Docker.DockerOptions>((value) => typeof value === 'object' && value !== null, { message: 'expected a dockerode instance or its options' }).optional(),
    env: envSchema.optional(),
    labels: labelsSchema.optional(),
    workspaceDir: absolutePath('directory')
      .refine((value) => value.replace(/\/+$/, '') !== '', 'the workspace cannot be "/"')
      .refine((value) => !value.split('/').includes('..'), 'must not contain ".."')
      .optional(),
    mounts: z.array(z.object({ source: absolutePath('host path'), target: absolutePath('container path'), readOnly: z.boolean().optional() }).strict()).optional(),
    extraHosts: z.array(z.string().regex(/^[A-Za-z0-9.-]+:[0-9A-Fa-f.:]+$|^[A-Za-z0-9.-]+:host-gateway$/, "expected 'name:ip' or 'name:host-gateway'")).optional(),
    publishPorts: z.array(port).optional(),
    killGraceMs: z.number().int('expected an integer number of milliseconds').min(0).max(600_000).optional(),
    maxExecOutputBytes: z.number().int().min(1024).optional(),
  })
  .strict()

/**
 * Validate `config` and fill in defaults.
 * @throws SandboxConfigError naming the field, e.g. `dockerSandbox.resources.memory`.
 */
export function resolveConfig(config: DockerSandboxConfig): ResolvedDockerConfig {
  const parsed = parseConfig(configSchema, config, 'dockerSandbox')
  const workspaceDir = (parsed.workspaceDir ?? DEFAULT_WORKSPACE_DIR).replace(/\/+$/, '').replace(/\/{2,}/g, '/')
  return Object.freeze({
    image: parsed.image,
    user: parsed.user,
    network: parsed.network ?? 'bridge',
    resources: { ...parsed.resources },
    env: { ...parsed.env },
    labels: { ...parsed.labels },
    workspaceDir,
    mounts: (parsed.mounts ?? []).map((mount) => ({ source: mount.source, target: mount.target, readOnly: mount.readOnly ?? false })),
    extraHosts: parsed.extraHosts ?? [],
    publishPorts: parsed.publishPorts ?? [],
    killGraceMs: parsed.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    maxExecOutputBytes: parsed.maxExecOutputBytes ?? DEFAULT_MAX_EXEC_OUTPUT_BYTES,
  })
}

/** A stable digest of what shapes a sandbox (image, user, network, resources, workspace, mounts). */
export function fingerprintOf(config: ResolvedDockerConfig): string {
  const shape = {
    image: config.image,
    user: config.user ?? '',
    network: config.network,
    resources: config.resources,
    workspaceDir: config.workspaceDir,
    mounts: config.mounts,
  }
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16)
}

/** The dockerode client for `option` (an instance is used as is). */
export function dockerClientFrom(option: unknown, construct: (options?: Docker.DockerOptions) => Docker): Docker {
  if (option && typeof option === 'object' && 'modem' in option && typeof (option as Docker).createContainer === 'function') return option as Docker
  return construct(option as Docker.DockerOptions | undefined)
}

/** `unix:///var/run/docker.sock` or `http://host:port`, for messages. */
export function endpointOf(docker: Docker): string {
  const modem = (docker as unknown as { modem?: { socketPath?: unknown; host?: string; port?: number | string; protocol?: string } }).modem
  if (modem && typeof modem.socketPath === 'string') return `unix://${modem.socketPath}`
  if (modem?.host) return `${modem.protocol ?? 'http'}://${modem.host}${modem.port ? `:${modem.port}` : ''}`
  return 'the configured Docker endpoint'
}
