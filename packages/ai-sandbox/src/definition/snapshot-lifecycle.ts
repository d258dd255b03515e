/**
 * Snapshot-after-setup: after bootstrap, take a provider snapshot and record it
 * on the thread's instance record and on a workspace-level record, so later
 * runs restore it and skip setup. Invariant: only spec 003's record fields are
 * read; a snapshot's age is the workspace record's `updatedAt`.
 * Design notes: docs/design/definition.md
 */
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxProvider } from '../contracts/provider.js'
import type { SandboxInstanceRecord, SandboxInstanceStore } from './instance-store.js'
import { computeSandboxKey, type SandboxKeyInput } from './sandbox-key.js'

/** A snapshot worth restoring. */
export interface SnapshotCandidate {
  readonly snapshotId: string
}

/**
 * The workspace-level key under which the latest after-setup snapshot is
 * kept: the compound key of the same tenant, definition, provider (with its
 * fingerprint) and workspace hash, for no thread. Changing the setup, the
 * source or the image changes it, so a stale snapshot is never restored.
 */
export function workspaceSnapshotKey(input: Omit<SandboxKeyInput, 'threadId' | 'runId' | 'reuse'>): string {
  return computeSandboxKey({ ...input, threadId: '', reuse: 'thread' }).replace(/^sbx:/, 'sbx-snapshot:')
}

/**
 * The snapshot to restore for a key. Every snapshot core records is an
 * after-setup snapshot of the same workspace, so the workspace record names
 * the newest one (the thread's own is either the same or replaced and
 * deleted), and its `updatedAt` is when that snapshot was recorded. Without a
 * workspace record the thread's snapshot has no known age: it is used only
 * when there is no `snapshotMaxAge`.
 * @param maxAgeMs - Ignore snapshots older than this. Undefined: any age.
 */
export async function findSnapshot(input: {
  instances: SandboxInstanceStore
  threadRecord: SandboxInstanceRecord | null
  workspaceKey: string
  maxAgeMs: number | undefined
  now: number
  logger?: InternalLogger
}): Promise<SnapshotCandidate | null> {
  const { maxAgeMs, logger } = input
  const workspaceRecord = await input.instances.get(input.workspaceKey)
  if (workspaceRecord?.latestSnapshotId) {
    if (maxAgeMs !== undefined && input.now - workspaceRecord.updatedAt > maxAgeMs) {
      logger?.sandbox(`snapshot ${workspaceRecord.latestSnapshotId} is older than snapshotMaxAge; it will be rebuilt`)
      return null
    }
    return { snapshotId: workspaceRecord.latestSnapshotId }
  }
  const own = input.threadRecord?.latestSnapshotId
  if (!own) return null
  if (maxAgeMs !== undefined) {
    logger?.sandbox(`snapshot ${own} has no workspace record, so its age is unknown and snapshotMaxAge is set; it will be rebuilt`)
    return null
  }
  return { snapshotId: own }
}

/**
 * Start a sandbox from a snapshot.
 * @returns The new handle, or `null` when the provider cannot restore it (the snapshot was deleted); the caller then creates a fresh sandbox.
 */
export async function restoreFromSnapshot(provider: SandboxProvider, candidate: SnapshotCandidate, create: { key: string; labels: Record<string, string>; network?: 'blocked' }, logger?: InternalLogger): Promise<SandboxHandle | null> {
  // Decided by the flag: a provider without snapshots may still define a method that throws.
  if (!provider.capabilities().snapshots || !provider.restoreSnapshot) return null
  try {
    const handle = await provider.restoreSnapshot({ snapshotId: candidate.snapshotId, key: create.key, labels: create.labels, ...(create.network ? { network: create.network } : {}) })
    logger?.sandbox(`restored ${create.key} from snapshot ${candidate.snapshotId} (${handle.id}); setup skipped`)
    return handle
  } catch (error) {
    logger?.warn(`sandbox snapshot ${candidate.snapshotId} could not be restored; bootstrapping a fresh sandbox instead`, { error })
    return null
  }
}

/**
 * Take the after-setup snapshot and record it on the workspace-level key.
 * @returns The snapshot, or `null` when taking it failed (logged; the sandbox stays usable).
 */
export async function snapshotAfterSetup(input: {
  handle: SandboxHandle
  provider: SandboxProvider
  instances: SandboxInstanceStore
  workspaceKey: string
  threadId: string
  logger?: InternalLogger
}): Promise<SnapshotCandidate | null> {
  const { handle, instances, workspaceKey, logger } = input
  if (!handle.capabilities.snapshots || !handle.snapshot) return null
  try {
    const ref = await handle.snapshot('after-setup')
    const previous = await instances.get(workspaceKey)
    // Written only here, so its updatedAt is the snapshot's age for snapshotMaxAge.
    await instances.upsert({ key: workspaceKey, provider: input.provider.name, providerSandboxId: handle.id, threadId: input.threadId, latestSnapshotId: ref.snapshotId, updatedAt: Date.now() })
    logger?.sandbox(`snapshot after setup: ${ref.snapshotId}`)
    if (previous?.latestSnapshotId && previous.latestSnapshotId !== ref.snapshotId) await deleteSnapshot(input.provider, previous.latestSnapshotId, logger)
    return { snapshotId: ref.snapshotId }
  } catch (error) {
    logger?.warn('taking the after-setup snapshot failed; later runs will run setup again', { error })
    return null
  }
}

async function deleteSnapshot(provider: SandboxProvider, snapshotId: string, logger?: InternalLogger): Promise<void> {
  if (!provider.deleteSnapshot) return
  await provider.deleteSnapshot({ snapshotId }).catch((error: unknown) => logger?.warn(`deleting the replaced snapshot ${snapshotId} failed`, { error }))
}
