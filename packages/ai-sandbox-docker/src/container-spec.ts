/**
 * Pure translation of the resolved config and one create request into the
 * Engine API's container-create body. Owns the choices every sandbox
 * container shares: an init process (so orphans are reaped and stop is quick),
 * a BusyBox-compatible keep-alive (`tail -f /dev/null`), the workspace as the
 * working directory, identifying labels, network, limits and mounts.
 */
import { randomUUID } from 'node:crypto'
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
}

/** Build the create body for `request`. */
export function containerCreateOptions(config: ResolvedDockerConfig, request: ContainerRequest, now = Date.now()): Docker.ContainerCreateOptions {
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
      [LABEL.workspace]: request.workspaceDir,
      [LABEL.user]: config.user ?? '',
      [LABEL.image]: request.image,
    },
    ...(config.publishPorts.length > 0 ? { ExposedPorts: exposed } : {}),
    HostConfig: {
      Init: true,
      NetworkMode: config.network,
      // host-gateway needs a bridge; with no network the entry would be useless.
      ...(config.network === 'none' ? {} : { ExtraHosts: ['host.docker.internal:host-gateway', ...config.extraHosts] }),
      ...(memory !== undefined ? { Memory: memory } : {}),
      ...(config.resources.cpus !== undefined ? { NanoCpus: Math.round(config.resources.cpus * 1e9) } : {}),
      ...(config.resources.pids !== undefined ? { PidsLimit: config.resources.pids } : {}),
      ...(config.mounts.length > 0 ? { Mounts: config.mounts.map((mount) => ({ Type: 'bind' as const, Source: mount.source, Target: mount.target, ReadOnly: mount.readOnly })) } : {}),
      ...(config.publishPorts.length > 0 ? { PortBindings: bindings } : {}),
    },
  }
}
