/**
 * The lease and the record of a durable run on the host that STARTS it: the
 * host holds the driver lease while the run is live, releases it when the run
 * ends here, and writes the terminal status unless it lost the lease. Total.
 * Source: spec 000 "Single-writer safety", "A real `LockStore` is required".
 * Design notes: docs/design/with-sandbox.md
 */
import { isTerminalRunStatus, type RunStore, type StreamChunk } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import { runDriverLockKey } from '../durability/claim.js'
import { isEpochFencedRunStore } from '../durability/epoch-fence.js'
import { decideOutcome, type PumpEnd } from '../durability/run-outcome.js'

/** The lease of a run this host started. */
export interface StartedRunLease {
  /** Ends the lease (idempotent). */
  release: () => void
  /** True once the lock store reported the lease lost. */
  readonly lost: boolean
}

/** The lock a durable run's lease is taken on when `withSandbox` has none: this process only. */
const PROCESS_LOCKS = new InMemoryLockStore()

/**
 * Take the run's driver lease and hold it until `release()`. Resolves once it
 * is held, or once taking it failed (logged: a lock store that is down must
 * not stop the run). `locks` absent: a process-wide in-memory lock.
 */
export async function holdStartedRunLease(locks: LockStore | undefined, runId: string, logger: InternalLogger | undefined): Promise<StartedRunLease> {
  let resolveReleased!: () => void
  const released = new Promise<void>((resolve) => (resolveReleased = resolve))
  /** Set by `release()`: a lease lost after that (the store closing as the app shuts down) is no loss of a live run. */
  let ended = false
  const release = (): void => {
    ended = true
    resolveReleased()
  }
  let held!: () => void
  const acquired = new Promise<void>((resolve) => (held = resolve))
  let lost = false
  void (locks ?? PROCESS_LOCKS)
    .withLock(runDriverLockKey(runId), async (signal) => {
      held()
      const onLost = (): void => {
        if (ended) return
        lost = true
        logger?.errors(`withSandbox: run ${runId} lost its driver lease while it was live here; a takeover may now drive it, and this host will not settle its record`)
      }
      if (signal.aborted) onLost()
      else signal.addEventListener('abort', onLost, { once: true })
      await released
      signal.removeEventListener('abort', onLost)
    })
    .catch((error: unknown) => {
      held()
      logger?.errors(`withSandbox: taking the driver lease of run ${runId} failed; the run goes on without it`, { error })
    })
  await acquired
  return {
    release,
    get lost() {
      return lost
    },
  }
}

/**
 * Write the terminal status of a run this host started, as `pipeToRunLog`'s
 * table decides it from how the run ended (`end`, `cancelled`); a detach (an
 * abort with no cancel) writes nothing. Skipped when the lease was lost, when
 * a driver claimed the run (its `driverEpoch` is set), or when the record is
 * already terminal. On an `EpochFencedRunStore` the write itself is
 * conditional on `driverEpoch` still being unset, so a driver that claims
 * between the read and the write wins. Never throws.
 */
export async function settleStartedRun(runs: RunStore, runId: string, end: PumpEnd, cancelled: boolean, lease: StartedRunLease, logger: InternalLogger | undefined): Promise<void> {
  const { patch } = decideOutcome(end, cancelled)
  if (!patch || lease.lost) return
  try {
    const record = await runs.get(runId)
    if (!record || isTerminalRunStatus(record.status) || record.driverEpoch !== undefined) return
    if (!isEpochFencedRunStore(runs)) return await runs.update(runId, patch)
    if (!(await runs.updateAtEpoch(runId, undefined, patch))) logger?.errors(`withSandbox: the store refused the terminal status of run ${runId}: a driver claimed it meanwhile, which settles it`)
  } catch (error) {
    logger?.errors(`withSandbox: settling the record of run ${runId} failed`, { error })
  }
}

/** The last `RUN_FINISHED` / `RUN_ERROR` a run passed, for {@link settleStartedRun}. */
export function isTerminalChunk(chunk: StreamChunk): boolean {
  return chunk.type === 'RUN_FINISHED' || chunk.type === 'RUN_ERROR'
}
