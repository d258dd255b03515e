/**
 * Snapshots as committed images: `docker commit` of a sandbox container
 * (paused for the instant of the commit) into `tanstack-sandbox-snapshot:<tag>`,
 * labelled so restore can check it and `pruneDockerSandboxes` can find it. A
 * commit captures files, not processes, and not bind mounts. The tag keeps
 * `docker image prune` from treating a snapshot as dangling.
 */
import type Docker from 'dockerode'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { engineError, operationError, shortId, statusOf } from './errors.js'
import { LABEL, labelInstruction } from './labels.js'
import type { SandboxState } from './state.js'

/** Repository name of committed snapshot and fork images. */
export const SNAPSHOT_REPOSITORY = 'tanstack-sandbox-snapshot'

/** A commit of one sandbox. */
export interface Commit {
  /** The image id (`sha256:...`): the snapshot id. */
  readonly imageId: string
  readonly createdAt: number
}

/**
 * Commit the sandbox's container.
 * @param kind - `snapshot` (kept until pruned) or `fork` (removed with the fork).
 * @throws SandboxConfigError `snapshot.label` for a label with control characters or over 256 characters.
 */
export async function commitSandbox(state: SandboxState, kind: 'snapshot' | 'fork', label?: string): Promise<Commit> {
  state.assertLive(kind === 'fork' ? 'fork' : 'snapshot')
  if (label !== undefined && (typeof label !== 'string' || label.length > 256 || /\p{Cc}/u.test(label))) {
    throw new SandboxConfigError('snapshot.label', 'Invalid option snapshot.label: expected text of at most 256 characters without control characters.')
  }
  const createdAt = Date.now()
  const labels: Record<string, string> = {
    [LABEL.snapshot]: state.id,
    [LABEL.snapshotKind]: kind,
    [LABEL.snapshotCreatedAt]: String(createdAt),
    [LABEL.snapshotLabel]: label ?? '',
    // The sandbox's secret stays with it: a container started from this image draws its own.
    [LABEL.journalSecret]: '',
  }
  try {
    const result = (await state.container.commit({
      repo: SNAPSHOT_REPOSITORY,
      tag: `${shortId(state.id)}-${createdAt}-${kind}`,
      comment: `${kind} of sandbox ${state.id}${label ? `: ${label}` : ''}`,
      pause: true,
      changes: [labelInstruction(labels)],
    })) as { Id?: string }
    if (!result.Id) throw operationError('create-failed', `${kind}: the engine committed sandbox ${state.id} but returned no image id.`)
    return { imageId: result.Id, createdAt }
  } catch (error) {
    throw engineError('create-failed', kind, error, { endpoint: state.endpoint, id: state.id })
  }
}

/**
 * Look up a snapshot image and check it is one of ours.
 * @returns Its image id and labels.
 * @throws SandboxOperationError `not-found` when the image is gone;
 *   SandboxConfigError `restoreSnapshot.snapshotId` for an image that is not a sandbox snapshot.
 */
export async function inspectSnapshot(docker: Docker, snapshotId: string, endpoint: string): Promise<{ imageId: string; labels: Readonly<Record<string, string>> }> {
  if (typeof snapshotId !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,255}$/.test(snapshotId)) {
    throw new SandboxConfigError('restoreSnapshot.snapshotId', `Invalid option restoreSnapshot.snapshotId: ${JSON.stringify(snapshotId)} is not an image id; pass the snapshotId returned by handle.snapshot().`)
  }
  let info: Docker.ImageInspectInfo
  try {
    info = await docker.getImage(snapshotId).inspect()
  } catch (error) {
    if (statusOf(error) === 404) {
      throw operationError('not-found', `restoreSnapshot: snapshot ${snapshotId} does not exist on the engine at ${endpoint} (removed, e.g. by pruneDockerSandboxes or docker rmi). Take a new snapshot.`, error)
    }
    throw engineError('create-failed', 'restoreSnapshot', error, { endpoint })
  }
  const labels = info.Config?.Labels ?? {}
  if (!labels[LABEL.snapshot]) {
    throw new SandboxConfigError('restoreSnapshot.snapshotId', `Invalid option restoreSnapshot.snapshotId: image ${snapshotId} is not a sandbox snapshot (no ${LABEL.snapshot} label). Pass the snapshotId returned by handle.snapshot().`)
  }
  return { imageId: info.Id, labels }
}

/**
 * Delete a snapshot image. An image still used by a container (a restored
 * sandbox) or by a child image cannot be removed: it is untagged instead, so
 * it is no longer listed, and removed when its last sandbox is destroyed
 * ({@link removeReleasedSnapshot}).
 * @throws SandboxConfigError `deleteSnapshot.snapshotId` for an image that is not a sandbox snapshot.
 */
export async function deleteSnapshotImage(docker: Docker, snapshotId: string, endpoint: string): Promise<void> {
  let tags: string[]
  try {
    const info = await docker.getImage(snapshotId).inspect()
    if (!info.Config?.Labels?.[LABEL.snapshot]) {
      throw new SandboxConfigError('deleteSnapshot.snapshotId', `Invalid option deleteSnapshot.snapshotId: image ${snapshotId} is not a sandbox snapshot (no ${LABEL.snapshot} label); the provider only deletes images it committed.`)
    }
    tags = info.RepoTags ?? []
  } catch (error) {
    if (statusOf(error) === 404) return // already gone: deleting is idempotent
    throw engineError('not-found', 'deleteSnapshot', error, { endpoint })
  }
  try {
    await docker.getImage(snapshotId).remove()
    return
  } catch (error) {
    if (statusOf(error) === 404) return
    if (statusOf(error) !== 409) throw engineError('not-found', 'deleteSnapshot', error, { endpoint })
  }
  for (const tag of tags.filter((name) => name !== '<none>:<none>')) {
    try {
      await docker.getImage(tag).remove({ force: true, noprune: true })
    } catch (error) {
      if (statusOf(error) !== 404) throw engineError('not-found', 'deleteSnapshot', error, { endpoint })
    }
  }
}

/** After a restored sandbox is destroyed: remove its snapshot image if `deleteSnapshot` already untagged it. */
export async function removeReleasedSnapshot(docker: Docker, imageId: string): Promise<void> {
  try {
    const info = await docker.getImage(imageId).inspect()
    if ((info.RepoTags ?? []).some((tag) => tag !== '<none>:<none>') || !info.Config?.Labels?.[LABEL.snapshot]) return
    await docker.getImage(imageId).remove()
  } catch (error) {
    // 404: already gone. 409: another restored sandbox or a child snapshot still uses it.
    if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error
  }
}

/** Remove a fork's image; it may still back another container or snapshot, which is fine. */
export async function removeForkImage(docker: Docker, imageId: string): Promise<void> {
  try {
    await docker.getImage(imageId).remove()
  } catch (error) {
    // 404: already gone. 409: still used by a container or a child image; pruneDockerSandboxes removes it later.
    if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error
  }
}
