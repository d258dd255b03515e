/**
 * `pruneDockerSandboxes`: remove what this provider left on an engine
 * (containers, snapshot and fork images, volumes with the sandbox label),
 * optionally narrowed by more labels. Invariant: it never touches anything
 * without the `tanstack.sandbox` label, and leaves the shared network alone.
 * Design notes: docs/design/docker.md
 */
import Docker from 'dockerode'
import { dockerClientFrom, endpointOf } from './config.js'
import { engineError, statusOf } from './errors.js'
import { LABEL } from './labels.js'

/** Options of {@link pruneDockerSandboxes}. */
export interface PruneDockerSandboxesOptions {
  /** A dockerode instance or its options. Default: `DOCKER_HOST` or `/var/run/docker.sock`. */
  docker?: Docker | Docker.DockerOptions
  /** Only resources that also carry these labels (e.g. the `labels` given to `dockerSandbox`). */
  labels?: Record<string, string>
  /** Also remove snapshot and fork images. Default `true`. */
  images?: boolean
}

/** What {@link pruneDockerSandboxes} removed, by id. */
export interface PruneDockerSandboxesResult {
  containers: string[]
  images: string[]
  volumes: string[]
}

/**
 * Remove sandbox containers (forced, with their anonymous volumes), then
 * snapshot images and labelled volumes.
 *
 * @returns The ids removed.
 * @throws SandboxOperationError `exec-failed` when the engine refuses (not for "already gone").
 * @example
 * ```ts
 * await pruneDockerSandboxes({ labels: { 'my-app.env': 'test' } })
 * ```
 */
export async function pruneDockerSandboxes(options: PruneDockerSandboxesOptions = {}): Promise<PruneDockerSandboxesResult> {
  const docker = dockerClientFrom(options.docker, (config) => new Docker(config))
  const filters = { label: [LABEL.sandbox, ...Object.entries(options.labels ?? {}).map(([key, value]) => `${key}=${value}`)] }
  const context = { endpoint: endpointOf(docker) }
  const result: PruneDockerSandboxesResult = { containers: [], images: [], volumes: [] }
  try {
    for (const container of await docker.listContainers({ all: true, filters })) {
      if (await gone(() => docker.getContainer(container.Id).remove({ force: true, v: true }))) result.containers.push(container.Id)
    }
    if (options.images !== false) {
      let pending = (await docker.listImages({ all: true, filters })).sort((a, b) => b.Created - a.Created)
      while (pending.length > 0) {
        const failed: typeof pending = []
        for (const image of pending) {
          if (await gone(() => docker.getImage(image.Id).remove({ force: true }), [409])) result.images.push(image.Id)
          else failed.push(image)
        }
        // Stop when a round removed nothing: what is left is still in use outside our labels.
        if (failed.length === pending.length) break
        pending = failed
      }
    }
    const { Volumes: volumes } = await docker.listVolumes({ filters })
    for (const volume of volumes ?? []) {
      if (await gone(() => docker.getVolume(volume.Name).remove(), [409])) result.volumes.push(volume.Name)
    }
  } catch (error) {
    throw engineError('exec-failed', 'pruneDockerSandboxes', error, context)
  }
  return result
}

/** Run a removal; true when it removed something, false for "already gone" or a tolerated status. */
async function gone(remove: () => Promise<unknown>, tolerated: number[] = []): Promise<boolean> {
  try {
    await remove()
    return true
  } catch (error) {
    const status = statusOf(error)
    if (status === 404 || (status !== undefined && tolerated.includes(status))) return false
    throw error
  }
}
