/**
 * Pure translation of the resolved config and one create request into the
 * Engine API's container-create body. Owns the choices every sandbox container
 * shares: init process, keep-alive, working directory, labels, network,
 * limits, mounts and the hardening.
 * Design notes: docs/design/docker.md
 */
import { randomBytes, randomUUID } from 'node:crypto'
import type Docker from 'dockerode'
import type { ResolvedDockerConfig } from './config.js'
import { LABEL } from './labels.js'
import { envList } from './state.js'

/** What one container is created for. */
export interface ContainerRequest {
  /** Image tag or snapshot image id. */
  image: string
  workspaceDir: string
  key?: string
  /** Caller labels (already validated). */
  labels: Readonly<Record<string, string>>
  /** Create-time env, merged over the provider's `env`. */
  env: Readonly<Record<string, string>>
  /** Provider labels for this container only (origin, fork image, cleared inherited keys). */
  extraLabels?: Readonly<Record<string, string>>
  /** `'blocked'` (a policy that denies network): this container gets network `none` whatever the config says. */
  network?: 'blocked'
}

/** CFS period of the CPU limit, in µs (Docker's `--cpus` uses the same 100 ms). */
const CPU_PERIOD_US = 100_000

/**
 * Build the create body for `request`.
 * @param networkMode - What `HostConfig.NetworkMode` names: the network's id for
 *   the provider-managed network (immune to a duplicate name), else `config.network`.
 */
export function containerCreateOptions(config: ResolvedDockerConfig, request: ContainerRequest, now = Date.now(), networkMode: string = config.network): Docker.ContainerCreateOptions {
  const exposed = Object.fromEntries(config.publishPorts.map((port) => [`${port}/tcp`, {}]))
  const bindings = Object.fromEntries(config.publishPorts.map((port) => [`${port}/tcp`, [{ HostIp: '127.0.0.1', HostPort: '' }]]))
  const memory = config.resources.memory
  return {
    name: `tanstack-sandbox-${randomUUID().slice(0, 12)}`,
    Image: request.image,
    // `tail -f /dev/null` exists in BusyBox and coreutils; `sleep infinity` does not in BusyBox.
    Entrypoint: ['tail'],
    Cmd: ['-f', '/dev/null'],
    ...(config.user !== undefined ? { User: config.user } : {}),
    WorkingDir: request.workspaceDir,
    Env: envList({ ...config.env, ...request.env }),
    Labels: {
      ...config.labels,
      ...request.labels,
      ...request.extraLabels,
      [LABEL.sandbox]: '1',
      [LABEL.key]: request.key ?? '',
      [LABEL.createdAt]: String(now),
      [LABEL.journalSecret]: randomBytes(32).toString('hex'),
      [LABEL.workspace]: request.workspaceDir,
      [LABEL.user]: config.user ?? '',
      [LABEL.network]: config.network,
      [LABEL.image]: request.image,
    },
    ...(config.publishPorts.length > 0 ? { ExposedPorts: exposed } : {}),
    HostConfig: {
      Init: true,
      NetworkMode: networkMode,
      // host-gateway needs a bridge; with no network the entry would be useless.
      ...(config.network === 'none' ? {} : { ExtraHosts: ['host.docker.internal:host-gateway', ...config.extraHosts] }),
      CapDrop: ['ALL'],
      ...(config.capAdd.length > 0 ? { CapAdd: [...config.capAdd] } : {}),
      ...(config.noNewPrivileges ? { SecurityOpt: ['no-new-privileges'] } : {}),
      // MemorySwap equal to Memory: the limit is not silently doubled by swap.
      ...(memory !== undefined ? { Memory: memory, MemorySwap: memory } : {}),
      // A quota rather than NanoCpus: the engine refuses NanoCpus above its core count, so a default of 2 would fail on a 1-CPU engine.
      ...(config.resources.cpus !== undefined ? { CpuPeriod: CPU_PERIOD_US, CpuQuota: Math.round(config.resources.cpus * CPU_PERIOD_US) } : {}),
      ...(config.resources.pids !== undefined ? { PidsLimit: config.resources.pids } : {}),
      ...(config.mounts.length > 0 ? { Mounts: config.mounts.map((mount) => ({ Type: 'bind' as const, Source: mount.source, Target: mount.target, ReadOnly: mount.readOnly })) } : {}),
      ...(config.publishPorts.length > 0 ? { PortBindings: bindings } : {}),
    },
  }
}
