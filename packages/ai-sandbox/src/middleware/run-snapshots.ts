/**
 * Portable snapshots in a `withSandbox({ snapshots })` run (spec 000
 * "Portable sandbox snapshots"): the thread's writer lease, held from setup
 * and renewed while the run lives; the restore of the latest checkpoint into
 * a new sandbox (through `ensure`'s `restore`, so never over a live resumed
 * one, and before the run projects anything); and the checkpoint after a
 * successful run once `withPersistence` saved its transcript. Invariant: a
 * run that does not end successfully (error, abort, detach, pause) writes no
 * checkpoint, and every run gives its lease up at its terminal hook.
 */
import type { ChatMiddlewareContext } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { getSandboxTranscript, type SandboxTranscriptSignal } from '../capabilities/tokens.js'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import { SandboxSnapshotError } from '../snapshots/errors.js'
import { SNAPSHOT_RUNTIME, type SandboxSnapshotRuntime, type SandboxSnapshots } from '../snapshots/sandbox-snapshots.js'
import type { SandboxCheckpoint, SandboxCheckpointLease } from '../snapshots/stores.js'

/** How long a finished run waits for `withPersistence` to report its transcript, ms (its `onFinish` runs just before ours). */
const TRANSCRIPT_WAIT_MS = 60_000

/** One run's part in portable snapshots. */
export interface RunSnapshots {
  readonly runtime: SandboxSnapshotRuntime
  readonly threadId: string
  readonly transcript: SandboxTranscriptSignal
  /** The lease as last renewed; `undefined` once lost or released. */
  lease: SandboxCheckpointLease | undefined
  /** Stops the renewal and gives the lease up; idempotent. */
  release: () => Promise<void>
}

/**
 * Setup: check `withPersistence(snapshots.persistence)` comes first, take the
 * thread's writer lease (owner: the run id, so a takeover of this same run can
 * take it over) and keep it renewed.
 * @throws SandboxSnapshotError `persistence-missing`, `lease-held`.
 */
export async function holdRunSnapshots(snapshots: SandboxSnapshots, ctx: ChatMiddlewareContext, logger: InternalLogger | undefined): Promise<RunSnapshots> {
  const runtime = snapshots[SNAPSHOT_RUNTIME]
  const transcript = getSandboxTranscript(ctx, { optional: true })
  if (!transcript || transcript.persistence !== runtime.persistence) {
    throw new SandboxSnapshotError(
      'persistence-missing',
      transcript
        ? 'withSandbox({ snapshots }): withPersistence was given another persistence value than snapshots.persistence; pass the same one to both (spec 000), e.g. withPersistence(snapshots.persistence).'
        : 'withSandbox({ snapshots }) needs withPersistence(snapshots.persistence) (from @tanstack/ai-sandbox/persistence) BEFORE it in middleware, so a checkpoint covers the saved transcript: middleware: [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })].',
    )
  }
  const held: RunSnapshots = {
    runtime,
    threadId: ctx.threadId,
    transcript,
    lease: await runtime.acquire(ctx.threadId, ctx.runId),
    release: async () => {
      clearInterval(timer)
      const lease = held.lease
      held.lease = undefined
      if (lease) await runtime.persistence.stores.checkpoints.releaseLease(lease).catch((error: unknown) => logger?.errors('releasing the snapshot lease failed (it expires by itself)', { error }))
    },
  }
  const timer = setInterval(() => {
    const lease = held.lease
    if (!lease) return
    runtime.persistence.stores.checkpoints.renewLease(lease, runtime.leaseTtlMs).then(
      (renewed) => {
        if (held.lease !== lease) return // released meanwhile
        held.lease = renewed ?? undefined
        if (!renewed) logger?.warn(`withSandbox: run ${ctx.runId} lost the snapshot lease of thread ${ctx.threadId}; it will write no checkpoint`)
      },
      (error: unknown) => logger?.errors('renewing the snapshot lease failed; trying again', { error }),
    )
  }, Math.max(250, Math.floor(runtime.leaseTtlMs / 3)))
  timer.unref?.()
  return held
}

/** The `restore` of `ensure`: the thread's latest checkpoint into a new sandbox, logged. */
export function restoreLatest(held: RunSnapshots, logger: InternalLogger | undefined): (handle: SandboxHandle) => Promise<void> {
  return async (handle) => {
    const restored = await held.runtime.restoreLatest(handle, held.threadId)
    logger?.sandbox(restored ? `restored checkpoint ${restored.checkpointId} (#${restored.sequence}) of thread ${held.threadId} into new sandbox ${handle.id}` : `thread ${held.threadId} has no checkpoint to restore into new sandbox ${handle.id}`)
  }
}

/**
 * A successful run's checkpoint: once `withPersistence` saved the transcript,
 * capture the workspace and append it under the lease. Nothing is written
 * when the transcript was not saved or the lease was lost (logged); a capture
 * or store failure is returned, for the terminal hook to report after the
 * lifecycle ran.
 */
export async function checkpointFinishedRun(held: RunSnapshots, sandbox: SandboxDefinition, handle: SandboxHandle, runId: string, logger: InternalLogger | undefined): Promise<{ checkpoint?: SandboxCheckpoint; error?: unknown }> {
  const outcome = await settledWithin(held.transcript.outcome, TRANSCRIPT_WAIT_MS)
  if (outcome === 'late') {
    logger?.errors(`withSandbox: run ${runId} wrote no checkpoint of thread ${held.threadId}: withPersistence did not report its transcript within ${TRANSCRIPT_WAIT_MS} ms (is it before withSandbox in middleware?)`)
    return {}
  }
  if (!outcome.saved) {
    logger?.warn(`withSandbox: run ${runId} wrote no checkpoint of thread ${held.threadId}: its transcript was not saved, and a checkpoint must cover the finished turn; the previous checkpoint stays the latest`)
    return {}
  }
  const lease = held.lease
  if (!lease) {
    const error = new SandboxSnapshotError('lease-lost', `withSandbox: run ${runId} lost the snapshot lease of thread ${held.threadId} before its checkpoint; nothing was written and the previous checkpoint stays the latest.`)
    return { error }
  }
  try {
    const checkpoint = await held.runtime.checkpoint(handle, { lease, kind: 'run', runId, messageCount: outcome.messageCount, secrets: Object.values(sandbox.workspace.secrets) })
    logger?.sandbox(`checkpoint ${checkpoint.checkpointId} (#${checkpoint.sequence}) of thread ${held.threadId}: ${checkpoint.manifest.entries.length} entries, ${checkpoint.messageCount} messages`)
    return { checkpoint }
  } catch (error) {
    logger?.errors(`withSandbox: the checkpoint of run ${runId} failed; the previous checkpoint stays the latest`, { error })
    return { error }
  }
}

/** `promise`'s value, or `'late'` after `ms`. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | 'late'> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)))
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}
