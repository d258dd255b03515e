/**
 * `dockerSandbox()`: the public factory and the private provider class behind
 * it. Owns the engine client and the live state of every sandbox this instance
 * touched; one container per sandbox, `handle.id` is the container id.
 * Invariant: it never leaves a container behind when create fails or aborts.
 * One file: the factory and class share that state through every lifecycle step.
 * Design notes: docs/design/docker.md
 */
import Docker from 'dockerode'
import { z } from 'zod'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import type { SandboxCapabilities, SandboxCreateInput, SandboxDestroyInput, SandboxHandle, SandboxProvider, SandboxRestoreInput, SandboxResumeInput } from '@tanstack/ai-sandbox'
import { envVarsSchema } from '@tanstack/ai-sandbox/internal'
import { dockerCapabilities } from './capabilities.js'
import { SANDBOX_NETWORK, dockerClientFrom, endpointOf, fingerprintOf, resolveConfig } from './config.js'
import type { DockerSandboxConfig, ResolvedDockerConfig } from './config.js'
import { containerCreateOptions } from './container-spec.js'
import type { ContainerRequest } from './container-spec.js'
import { PROVIDER_NAME, engineError, isMissingContainer, operationError, parseConfig, shortId, statusOf } from './errors.js'
import { createDockerHandle } from './handle.js'
import { LABEL, isProviderLabel } from './labels.js'
import { ensureSandboxNetwork, isMissingNetwork } from './network.js'
import { commitSandbox, deleteSnapshotImage, inspectSnapshot, removeForkImage, removeReleasedSnapshot } from './snapshot.js'
import { makeState, prepareSandbox } from './state.js'
import type { SandboxState } from './state.js'

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

const createInputSchema = z.object({
  key: z.string().optional(),
  network: z.literal('blocked', { message: "expected 'blocked' (or leave it out)" }).optional(),
  labels: z.record(z.string().min(1), z.string()).optional(),
  env: envVarsSchema.optional(),
})

/**
 * Create the Docker sandbox provider: every sandbox is a container started
 * from `image`, with its workspace at `/workspace` (or `workspaceDir`).
 *
 * Hardened by default (issue 16; each is loosened by its option): processes
 * run as uid 1000, every capability is dropped, `no-new-privileges` is set,
 * memory, CPU and processes are limited (`DEFAULT_RESOURCES`), and
 * sandboxes share the `tanstack-sandbox` network, on which they cannot reach
 * each other but reach the host.
 *
 * @param config - `image` (required, never pulled), `user` (default
 *   `'1000:1000'`), `network` (default `'tanstack-sandbox'`), `resources`
 *   (default 2 GiB, 2 CPUs, 1024 processes), `capAdd` (default none),
 *   `noNewPrivileges` (default `true`), `docker`, `env`, `labels`,
 *   `workspaceDir` (default `/workspace`), `mounts`, `extraHosts`,
 *   `publishPorts`, `killGraceMs` (default 2000), `maxExecOutputBytes`
 *   (default 64 MiB), `maxReadBytes` (default 64 MiB).
 * @returns A {@link SandboxProvider} named `docker` with snapshots, fork and resume.
 * @throws SandboxConfigError naming the field (e.g. `dockerSandbox.resources.memory`).
 *   Engine problems (not answering, image missing) surface on `create()` as
 *   SandboxOperationError `create-failed`.
 * @example
 * ```ts
 * const provider = dockerSandbox({ image: 'tanstack-sandbox-debian:bookworm' })
 * const handle = await provider.create()
 * const { stdout } = await handle.process.exec('echo hi')
 * await handle.destroy()
 * ```
 */
export function dockerSandbox(config: DockerSandboxConfig): SandboxProvider {
  const resolved = resolveConfig(config)
  const docker = dockerClientFrom(config.docker, (options) => new Docker(options))
  return new DockerProvider(resolved, docker)
}

class DockerProvider implements SandboxProvider {
  readonly name = PROVIDER_NAME
  readonly fingerprint: string
  /** Sandboxes this instance created or resumed, by container id. */
  private readonly live = new Map<string, SandboxState>()
  private readonly endpoint: string
  private readonly flags: SandboxCapabilities
  /** The managed network's id once ensured (first create); reset when it vanished. */
  private network: Promise<string> | undefined

  constructor(
    private readonly config: ResolvedDockerConfig,
    private readonly docker: Docker,
  ) {
    this.fingerprint = fingerprintOf(config)
    this.endpoint = endpointOf(docker)
    this.flags = dockerCapabilities(config.network)
  }

  capabilities = (): SandboxCapabilities => this.flags

  create = async (input: SandboxCreateInput = {}): Promise<SandboxHandle> => {
    throwIfAborted(input.signal, 'provider.create()')
    const { key, labels = {}, env = {}, network } = parseConfig(createInputSchema, input, 'create')
    return this.launch('create', { image: this.config.image, workspaceDir: this.config.workspaceDir, key, labels, env, ...(network ? { network } : {}) }, input.signal)
  }

  restoreSnapshot = async (input: SandboxRestoreInput): Promise<SandboxHandle> => {
    throwIfAborted(input.signal, 'provider.restoreSnapshot()')
    const { key, labels = {}, env = {}, network } = parseConfig(createInputSchema, { key: input.key, labels: input.labels, env: input.env, network: input.network }, 'restoreSnapshot')
    const { imageId, labels: imageLabels } = await inspectSnapshot(this.docker, input.snapshotId, this.endpoint)
    return this.launch(
      'restoreSnapshot',
      {
        image: imageId,
        workspaceDir: imageLabels[LABEL.workspace] || this.config.workspaceDir,
        key,
        labels,
        env,
        ...(network ? { network } : {}),
        extraLabels: { ...clearInherited(imageLabels), [LABEL.origin]: `snapshot:${imageId}` },
      },
      input.signal,
    )
  }

  resume = async (input: SandboxResumeInput): Promise<SandboxHandle | null> => {
    const id = validId(input.id, 'resume.id')
    throwIfAborted(input.signal, 'provider.resume()')
    const container = this.docker.getContainer(id)
    let info: Docker.ContainerInspectInfo
    try {
      info = await container.inspect()
    } catch (error) {
      if (statusOf(error) !== 404) throw engineError('not-found', 'provider.resume()', error, { endpoint: this.endpoint, id })
      this.forget(id)
      return null // removed (by destroy, or behind our back)
    }
    const labels = info.Config.Labels ?? {}
    if (labels[LABEL.sandbox] !== '1' || info.State.Status === 'removing' || info.State.Status === 'dead') return null
    try {
      if (info.State.Paused) await container.unpause()
      else if (!info.State.Running) await container.start()
    } catch (error) {
      if (isMissingContainer(error)) return null
      throw engineError('not-found', 'provider.resume()', error, { endpoint: this.endpoint, id: info.Id })
    }
    // Containers from before the network label: their NetworkMode ('default' is the default bridge).
    const mode = info.HostConfig.NetworkMode === 'default' ? 'bridge' : info.HostConfig.NetworkMode
    const network = labels[LABEL.network] || mode || this.config.network
    const known = this.live.get(info.Id)
    if (known && !known.destroyed) return this.handleFor(known, network)
    const workspaceRoot = labels[LABEL.workspace] || this.config.workspaceDir
    const user = labels[LABEL.user] || undefined
    const handle = { container, id: info.Id, endpoint: this.endpoint }
    const { physicalRoot, env } = await prepareSandbox(handle, 'provider.resume()', workspaceRoot, user)
    return this.handleFor(this.stateFor(container, info.Id, labels, workspaceRoot, physicalRoot, user, env), network)
  }

  destroy = async (input: SandboxDestroyInput): Promise<void> => {
    const id = validId(input?.id, 'destroy.id')
    const container = this.docker.getContainer(id)
    let labels: Record<string, string>
    try {
      const info = await container.inspect()
      labels = info.Config.Labels ?? {}
      if (labels[LABEL.sandbox] === '1') this.forget(info.Id)
    } catch (error) {
      if (statusOf(error) !== 404) throw engineError('not-found', 'provider.destroy()', error, { endpoint: this.endpoint, id })
      this.forget(id)
      return // already gone: destroy is idempotent
    }
    if (labels[LABEL.sandbox] !== '1') {
      throw new SandboxConfigError('destroy.id', `Invalid option destroy.id: container ${shortId(id)} is not a TanStack sandbox (no ${LABEL.sandbox} label); the provider only removes containers it created.`)
    }
    try {
      // force: stop whatever runs; v: remove its anonymous volumes too.
      await container.remove({ force: true, v: true })
    } catch (error) {
      // 404: removed concurrently. 409: a removal is already in progress.
      if (statusOf(error) !== 404 && statusOf(error) !== 409) throw engineError('not-found', 'provider.destroy()', error, { endpoint: this.endpoint, id })
    }
    try {
      const forkImage = labels[LABEL.forkImage]
      if (forkImage) await removeForkImage(this.docker, forkImage)
      const origin = labels[LABEL.origin] ?? ''
      if (origin.startsWith('snapshot:')) await removeReleasedSnapshot(this.docker, origin.slice('snapshot:'.length))
    } catch (error) {
      throw engineError('not-found', 'provider.destroy() (images)', error, { endpoint: this.endpoint, id })
    }
  }

  deleteSnapshot = async (input: { snapshotId: string }): Promise<void> => {
    const snapshotId = input?.snapshotId
    if (typeof snapshotId !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,255}$/.test(snapshotId)) {
      throw new SandboxConfigError('deleteSnapshot.snapshotId', `Invalid option deleteSnapshot.snapshotId: ${JSON.stringify(snapshotId)} is not an image id; pass the snapshotId returned by handle.snapshot().`)
    }
    await deleteSnapshotImage(this.docker, snapshotId, this.endpoint)
  }

  /** Create, start and prepare one container; on any failure (or abort) remove it again. */
  private async launch(what: string, request: ContainerRequest, signal?: AbortSignal): Promise<SandboxHandle> {
    let container: Docker.Container
    try {
      container = await this.createContainer(request)
    } catch (error) {
      throw engineError('create-failed', `provider.${what}()`, error, { endpoint: this.endpoint, image: request.image })
    }
    const target = { container, id: container.id, endpoint: this.endpoint }
    try {
      await container.start()
      throwIfAborted(signal, `provider.${what}()`)
      const { physicalRoot, env } = await prepareSandbox(target, `provider.${what}()`, request.workspaceDir, this.config.user)
      throwIfAborted(signal, `provider.${what}()`)
      const labels = (await container.inspect()).Config.Labels ?? {}
      return this.handleFor(this.stateFor(container, container.id, labels, request.workspaceDir, physicalRoot, this.config.user, env), labels[LABEL.network] || this.config.network)
    } catch (error) {
      const failure = engineError('create-failed', `provider.${what}()`, error, { endpoint: this.endpoint, id: container.id, image: request.image })
      try {
        await container.remove({ force: true, v: true })
      } catch (cleanup) {
        if (statusOf(cleanup) !== 404) {
          failure.message += ` The half-made container ${shortId(container.id)} could not be removed either (${String(cleanup)}); remove it with \`docker rm -f ${shortId(container.id)}\`.`
        }
      }
      throw failure
    }
  }

  /** Create the container; on the managed network, ensure the network first (again, once, if it was removed meanwhile). */
  private async createContainer(request: ContainerRequest): Promise<Docker.Container> {
    if (request.network === 'blocked') return this.docker.createContainer(containerCreateOptions({ ...this.config, network: 'none' }, request))
    if (this.config.network !== SANDBOX_NETWORK) return this.docker.createContainer(containerCreateOptions(this.config, request))
    for (let attempt = 0; ; attempt++) {
      this.network ??= ensureSandboxNetwork(this.docker, SANDBOX_NETWORK, this.endpoint)
      const ensuring = this.network
      ensuring.catch(() => {
        if (this.network === ensuring) this.network = undefined // a failed ensure is retried by the next create
      })
      const id = await ensuring
      try {
        return await this.docker.createContainer(containerCreateOptions(this.config, request, Date.now(), id))
      } catch (error) {
        if (attempt > 0 || !isMissingNetwork(error)) throw error
        if (this.network === ensuring) this.network = undefined
      }
    }
  }

  private stateFor(container: Docker.Container, id: string, labels: Record<string, string>, workspaceRoot: string, physicalRoot: string, user: string | undefined, env: Record<string, string>): SandboxState {
    return makeState({
      id,
      container,
      docker: this.docker,
      endpoint: this.endpoint,
      workspaceRoot,
      physicalRoot,
      user,
      labels,
      env: Object.freeze({ ...env }),
      killGraceMs: this.config.killGraceMs,
      maxExecOutputBytes: this.config.maxExecOutputBytes,
      maxReadBytes: this.config.maxReadBytes,
      pidsLimit: this.config.resources.pids,
    })
  }

  /** @param network - The network the container is on (from its label on resume). */
  private handleFor(state: SandboxState, network: string = this.config.network): SandboxHandle {
    this.live.set(state.id, state)
    return createDockerHandle(state, {
      capabilities: network === this.config.network ? this.flags : dockerCapabilities(network),
      network,
      destroy: () => this.destroy({ id: state.id }),
      snapshot: async (label) => {
        const commit = await commitSandbox(state, 'snapshot', label)
        return { snapshotId: commit.imageId, createdAt: commit.createdAt, ...(label !== undefined ? { label } : {}) }
      },
      fork: () => this.fork(state),
    })
  }

  /** Commit the sandbox and start a new container from the commit; the image goes with the fork. */
  private async fork(state: SandboxState): Promise<SandboxHandle> {
    const commit = await commitSandbox(state, 'fork')
    const userLabels = Object.fromEntries(Object.entries(state.labels).filter(([key]) => !isProviderLabel(key)))
    try {
      return await this.launch('fork', {
        image: commit.imageId,
        workspaceDir: state.workspaceRoot,
        key: state.labels[LABEL.key] || undefined,
        labels: userLabels,
        env: {},
        extraLabels: { ...clearInherited(state.labels), [LABEL.forkImage]: commit.imageId, [LABEL.origin]: `fork:${state.id}` },
      })
    } catch (error) {
      await removeForkImage(this.docker, commit.imageId).catch((cleanup: unknown) => {
        throw operationError('create-failed', `fork: starting the fork failed (${String(error)}) and its image ${commit.imageId} could not be removed (${String(cleanup)}).`, error)
      })
      throw error
    }
  }

  /** Mark a sandbox destroyed for every handle of this instance (by full container id). */
  private forget(id: string): void {
    const state = this.live.get(id)
    if (!state) return
    state.destroyed = true
    this.live.delete(id)
  }
}

/** Empty values for provider labels an image carries from the container it was committed from. */
function clearInherited(labels: Readonly<Record<string, string>>): Record<string, string> {
  const cleared: Record<string, string> = {}
  for (const key of [LABEL.snapshot, LABEL.snapshotKind, LABEL.snapshotLabel, LABEL.snapshotCreatedAt, LABEL.forkImage, LABEL.origin]) {
    if (labels[key] !== undefined) cleared[key] = ''
  }
  return cleared
}

function validId(id: unknown, field: string): string {
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
    throw new SandboxConfigError(field, `Invalid option ${field}: ${JSON.stringify(id)} is not a Docker sandbox id; pass handle.id (the container id).`)
  }
  return id
}

function throwIfAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw operationError('aborted', `${what} was aborted by the caller's AbortSignal.`, signal.reason)
}
