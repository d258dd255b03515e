/**
 * The configuration of `dockerSandbox()`: its public type, the zod schema (the
 * single source of validation messages) and the hardened defaults. Pure.
 * Invariant: everything downstream reads the parsed, defaulted
 * {@link ResolvedDockerConfig}, never the caller's object. One file: the type,
 * schema and defaults describe the same options and must change together.
 * Design notes: docs/design/docker.md
 */
import { createHash } from 'node:crypto'
import type Docker from 'dockerode'
import { envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { z } from 'zod'
import { parseConfig } from './errors.js'

/** A host path bind-mounted into every sandbox container. */
export interface DockerSandboxMount {
  /** Absolute path on the Docker host (a file or a directory). */
  source: string
  /** Absolute path inside the container. */
  target: string
  /** Mount read-only. Default `false`. */
  readOnly?: boolean
}

/**
 * Resource limits of every sandbox container. A field left out keeps its
 * default ({@link DEFAULT_RESOURCES}); `null` removes that limit.
 */
export interface DockerSandboxResources {
  /**
   * Memory limit: bytes, or a string with a unit (`'512m'`, `'2g'`). Minimum
   * 6 MB. Swap is not added on top (the limit covers memory plus swap).
   * Default 2 GiB; `null` for no limit.
   */
  memory?: number | string | null
  /** CPU limit in cores, e.g. `1.5` (a CFS quota, so it may exceed the engine's cores). Default 2; `null` for no limit. */
  cpus?: number | null
  /** Maximum number of processes (and threads) in the container: bounds a fork bomb. Default 1024; `null` for no limit. */
  pids?: number | null
}

/**
 * A Linux capability name as the kernel spells it, without the `CAP_` prefix
 * (`capabilities(7)`); {@link DockerSandboxConfig.capAdd} also accepts it with the prefix.
 */
export type LinuxCapability = (typeof LINUX_CAPABILITIES)[number]

/** Options of {@link dockerSandbox}. */
export interface DockerSandboxConfig {
  /** Image to start sandboxes from, e.g. `tanstack-sandbox-debian:bookworm`. Must exist on the engine (never pulled). */
  image: string
  /**
   * User processes and fs calls run as: a name from the image or `uid[:gid]`.
   * Default `'1000:1000'` ({@link DEFAULT_USER}): not root, with the workspace
   * and a HOME it owns (`/home/sandbox` when the image has no such user).
   * `'root'` (or `'0'`) runs as root, still without capabilities; `null` uses
   * the image's own `USER`.
   */
  user?: string | null
  /**
   * The network of every sandbox. Default `'tanstack-sandbox'`
   * ({@link SANDBOX_NETWORK}): a bridge the provider creates with
   * inter-container communication disabled, so one sandbox cannot connect to
   * another while the host (`host.docker.internal`) stays reachable.
   * `'bridge'`: Docker's default bridge, where containers reach each other
   * (looser). `'none'`: no network (the sandbox reaches nothing; `ports` is
   * off). `'host'`: the host's network stack (no isolation at all). Any other
   * name: that user-defined network, used as it is.
   */
  network?: 'bridge' | 'none' | 'host' | (string & {})
  /** Memory, CPU and process limits; see {@link DockerSandboxResources} and {@link DEFAULT_RESOURCES}. */
  resources?: DockerSandboxResources
  /**
   * Linux capabilities given back to the container. Every capability is
   * dropped (`CapDrop: ['ALL']`), and the sandbox needs none: the provider's
   * own setup runs without them. Add only what a workload needs, e.g.
   * `['NET_BIND_SERVICE']` for a port below 1024, or
   * {@link DOCKER_ENGINE_DEFAULT_CAPABILITIES} for Docker's own defaults.
   * Names from `capabilities(7)`, with or without `CAP_`. Default `[]`.
   */
  capAdd?: readonly string[]
  /**
   * Set `no-new-privileges`: no process gains privileges through setuid or
   * file-capability binaries (`sudo`, `su`, `ping` with file caps). Default
   * `true`; `false` opts out.
   */
  noNewPrivileges?: boolean
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
  /**
   * Largest file `fs.read`/`fs.readBytes` return, in bytes; a larger one
   * throws `SandboxLimitError` `file-too-large` before its bytes are sent.
   * At least 1. Default 64 MiB (`DEFAULT_MAX_READ_BYTES`).
   */
  maxReadBytes?: number
}

/** The parsed config with every default filled in. */
export interface ResolvedDockerConfig {
  readonly image: string
  /** `undefined`: the image's user. */
  readonly user: string | undefined
  readonly network: string
  /** `undefined` fields are unlimited. */
  readonly resources: { readonly memory: number | undefined; readonly cpus: number | undefined; readonly pids: number | undefined }
  /** Capabilities added back, canonical (no `CAP_` prefix), sorted, unique. */
  readonly capAdd: readonly LinuxCapability[]
  readonly noNewPrivileges: boolean
  readonly env: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
  readonly workspaceDir: string
  readonly mounts: readonly Required<DockerSandboxMount>[]
  readonly extraHosts: readonly string[]
  readonly publishPorts: readonly number[]
  readonly killGraceMs: number
  readonly maxExecOutputBytes: number
  readonly maxReadBytes: number
}

/** Default grace period between SIGTERM and SIGKILL, in ms. */
export const DEFAULT_KILL_GRACE_MS = 2000
/** Default exec output limit, in bytes (64 MiB). */
export const DEFAULT_MAX_EXEC_OUTPUT_BYTES = 64 * 1024 * 1024
/** Default bound of one `fs.read`/`fs.readBytes`, in bytes (64 MiB). */
export const DEFAULT_MAX_READ_BYTES = 64 * 1024 * 1024
/** Default workspace directory. */
export const DEFAULT_WORKSPACE_DIR = '/workspace'
/** Default user of sandbox processes: uid and gid 1000, not root. */
export const DEFAULT_USER = '1000:1000'
/** The provider-managed network every sandbox joins by default (a bridge with inter-container communication off). */
export const SANDBOX_NETWORK = 'tanstack-sandbox'

/**
 * Default limits of every sandbox container: 2 GiB of memory (no swap on top),
 * 2 CPUs, 1024 processes. Sized for one coding-agent CLI with its tools
 * (a Node or Rust CLI uses a few hundred MB and a few dozen threads).
 */
export const DEFAULT_RESOURCES: Readonly<{ memory: number; cpus: number; pids: number }> = Object.freeze({
  memory: 2 * 1024 ** 3,
  cpus: 2,
  pids: 1024,
})

/** Every Linux capability (`capabilities(7)`, kernel 5.9+), without the `CAP_` prefix. */
export const LINUX_CAPABILITIES = [
  'AUDIT_CONTROL', 'AUDIT_READ', 'AUDIT_WRITE', 'BLOCK_SUSPEND', 'BPF', 'CHECKPOINT_RESTORE', 'CHOWN', 'DAC_OVERRIDE',
  'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'IPC_LOCK', 'IPC_OWNER', 'KILL', 'LEASE', 'LINUX_IMMUTABLE', 'MAC_ADMIN',
  'MAC_OVERRIDE', 'MKNOD', 'NET_ADMIN', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_RAW', 'PERFMON', 'SETFCAP', 'SETGID',
  'SETPCAP', 'SETUID', 'SYSLOG', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_CHROOT', 'SYS_MODULE', 'SYS_NICE', 'SYS_PACCT',
  'SYS_PTRACE', 'SYS_RAWIO', 'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'WAKE_ALARM',
] as const

/**
 * The 14 capabilities the Docker engine grants a container unless told
 * otherwise (moby's default `oci` spec). `capAdd: DOCKER_ENGINE_DEFAULT_CAPABILITIES`
 * restores them, including `NET_RAW` (raw sockets: ARP and ICMP spoofing on the bridge).
 */
export const DOCKER_ENGINE_DEFAULT_CAPABILITIES: readonly LinuxCapability[] = Object.freeze([
  'AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD',
  'NET_BIND_SERVICE', 'NET_RAW', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT',
] as const)

const CAPABILITY_NAMES: ReadonlySet<string> = new Set(LINUX_CAPABILITIES)

const capabilitySchema = z
  .string()
  .transform((value) => value.toUpperCase().replace(/^CAP_/, ''))
  .superRefine((value, ctx) => {
    if (value === 'ALL') ctx.addIssue({ code: 'custom', message: "'ALL' is not accepted: list the capabilities the sandbox needs, e.g. ['NET_BIND_SERVICE']" })
    else if (!CAPABILITY_NAMES.has(value)) ctx.addIssue({ code: 'custom', message: `unknown capability '${value}': expected a Linux capability name from capabilities(7), e.g. 'NET_BIND_SERVICE' or 'CAP_NET_BIND_SERVICE'` })
  })

/**
 * Directories of the image's system a workspace must not be (or be inside):
 * the provider makes the workspace the sandbox user's own, so `/usr/bin` as a
 * workspace would hand the user the shell the provider's own root execs run.
 */
const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/usr', '/etc', '/proc', '/sys', '/dev', '/boot', '/run', '/var/lib', '/var/run']
const isSystemDir = (dir: string) => SYSTEM_DIRS.some((system) => dir === system || dir.startsWith(`${system}/`))

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
    user: z
      .string()
      .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$/, "expected a user name or 'uid[:gid]', e.g. '1000:1000', or null for the image's user")
      .nullable()
      .optional(),
    network: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, `expected '${SANDBOX_NETWORK}' (the default), 'bridge', 'none', 'host' or a network name`).optional(),
    resources: z
      .object({
        memory: memorySchema.nullable().optional(),
        cpus: z.number().min(0.01, 'expected at least 0.01 CPUs (or null for no limit)').max(1024).nullable().optional(),
        pids: z.number().int('expected a whole number of processes').min(1, 'expected at least 1 process (or null for no limit)').nullable().optional(),
      })
      .strict()
      .optional(),
    capAdd: z.array(capabilitySchema).optional(),
    noNewPrivileges: z.boolean('expected true (the default) or false to opt out').optional(),
    docker: z.custom<Docker | Docker.DockerOptions>((value) => typeof value === 'object' && value !== null, { message: 'expected a dockerode instance or its options' }).optional(),
    env: envVarsSchema.optional(),
    labels: labelsSchema.optional(),
    workspaceDir: absolutePath('directory')
      .refine((value) => value.replace(/\/+$/, '') !== '', 'the workspace cannot be "/"')
      .refine((value) => !value.split('/').includes('..'), 'must not contain ".."')
      .refine((value) => !isSystemDir(value.replace(/\/+$/, '').replace(/\/{2,}/g, '/')), `must not be a system directory or inside one (${SYSTEM_DIRS.join(', ')}): the sandbox user owns its workspace; use e.g. '/workspace' or '/home/sandbox/project'`)
      .optional(),
    mounts: z.array(z.object({ source: absolutePath('host path'), target: absolutePath('container path'), readOnly: z.boolean().optional() }).strict()).optional(),
    extraHosts: z.array(z.string().regex(/^[A-Za-z0-9.-]+:[0-9A-Fa-f.:]+$|^[A-Za-z0-9.-]+:host-gateway$/, "expected 'name:ip' or 'name:host-gateway'")).optional(),
    publishPorts: z.array(port).optional(),
    killGraceMs: z.number().int('expected an integer number of milliseconds').min(0).max(600_000).optional(),
    maxExecOutputBytes: z.number().int().min(1024).optional(),
    maxReadBytes: z.number().int('expected a whole number of bytes').min(1, 'expected at least 1 byte').optional(),
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
    user: parsed.user === null ? undefined : (parsed.user ?? DEFAULT_USER),
    network: parsed.network ?? SANDBOX_NETWORK,
    resources: Object.freeze({
      memory: limit(parsed.resources?.memory, DEFAULT_RESOURCES.memory),
      cpus: limit(parsed.resources?.cpus, DEFAULT_RESOURCES.cpus),
      pids: limit(parsed.resources?.pids, DEFAULT_RESOURCES.pids),
    }),
    capAdd: [...new Set(parsed.capAdd ?? [])].sort() as LinuxCapability[],
    noNewPrivileges: parsed.noNewPrivileges ?? true,
    env: { ...parsed.env },
    labels: { ...parsed.labels },
    workspaceDir,
    mounts: (parsed.mounts ?? []).map((mount) => ({ source: mount.source, target: mount.target, readOnly: mount.readOnly ?? false })),
    extraHosts: parsed.extraHosts ?? [],
    publishPorts: parsed.publishPorts ?? [],
    killGraceMs: parsed.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    maxExecOutputBytes: parsed.maxExecOutputBytes ?? DEFAULT_MAX_EXEC_OUTPUT_BYTES,
    maxReadBytes: parsed.maxReadBytes ?? DEFAULT_MAX_READ_BYTES,
  })
}

/** A limit as given (`null`: none, `undefined`: the default). */
function limit<T>(value: T | null | undefined, fallback: T): T | undefined {
  if (value === null) return undefined
  return value ?? fallback
}

/**
 * A stable digest of what shapes a sandbox: image, user, network, resources,
 * capabilities, `no-new-privileges`, workspace, mounts.
 */
export function fingerprintOf(config: ResolvedDockerConfig): string {
  const shape = {
    image: config.image,
    user: config.user ?? '',
    network: config.network,
    resources: config.resources,
    capAdd: config.capAdd,
    noNewPrivileges: config.noNewPrivileges,
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
