/**
 * The single-writer claim behind `sandboxRunDriver`: a per-run lease, an epoch
 * (`RunRecord.driverEpoch`) and the quiescence gate, fencing the event log and
 * the run record. Invariant: once a fence refuses, it stays shut.
 * Source: spec 000 "Single-writer safety". One file: lease, epoch and fences
 * share one claim state. Design notes: docs/design/durability.md
 */
import { isTerminalRunStatus, type RunRecord, type RunStore, type StreamDurability } from '@tanstack/ai'
import type { LockStore } from '@tanstack/ai/locks'
import { SandboxError } from '../contracts/errors.js'
import { isEpochFencedRunStore, isEpochFencedStreamDurability, StaleEpochError } from './epoch-fence.js'
import type { Reporter } from './run-report.js'

/**
 * How long, in ms, the stored log must stop growing before a successor's
 * first append (the quiescence window). Default of `sandboxRunDriver`'s
 * `fenceQuietMs`. Keep it above your lock's lease renewal interval. Not
 * waited on a log whose store checks the epoch itself
 * (`EpochFencedStreamDurability`, as the SQLite and PostgreSQL stores are).
 */
export const DEFAULT_FENCE_QUIET_MS = 5000

/** Why a claim was refused: the run is finished, has no record, or another driver claimed it first. */
export type RunClaimNotAcquiredReason = 'terminal' | 'unknown' | 'superseded'

/**
 * A run could not be claimed, so this host drives nothing and serves the log.
 * An ordinary outcome of a contended takeover; `resumeServerSentEventsResponse`
 * logs and swallows it.
 *
 * @example
 * ```ts
 * if (error instanceof RunClaimNotAcquiredError) console.log(error.runId, error.reason) // 'superseded'
 * ```
 */
export class RunClaimNotAcquiredError extends SandboxError<RunClaimNotAcquiredReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/RunClaimNotAcquiredError'
  /** The run that was not claimed. */
  readonly runId: string

  /**
   * @param runId - The run.
   * @param reason - `'terminal'` (already finished), `'unknown'` (no record), `'superseded'` (another driver claimed it, or the lease was gone before the claim landed).
   */
  constructor(runId: string, reason: RunClaimNotAcquiredReason, options: { detail?: string; cause?: unknown } = {}) {
    super(reason, `Run ${JSON.stringify(runId)} was not claimed: ${NOT_ACQUIRED[reason]}${options.detail ? ` (${options.detail})` : ''}. This host serves the log and drives nothing.`, options)
    this.runId = runId
  }
}

const NOT_ACQUIRED: Record<RunClaimNotAcquiredReason, string> = {
  terminal: 'its record is already terminal',
  unknown: 'the run store has no record of it',
  superseded: 'another driver holds it',
}

/**
 * This host held the claim and lost it mid-drive: the lease was revoked, or a
 * successor bumped `driverEpoch`. Its appends were refused and its terminal
 * record write suppressed. An ordinary outcome of a takeover.
 *
 * @example
 * ```ts
 * if (error instanceof RunClaimLostError) console.log(`superseded at epoch ${error.heldEpoch}`)
 * ```
 */
export class RunClaimLostError extends SandboxError<'claim-lost'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/RunClaimLostError'
  /** The run. */
  readonly runId: string
  /** The epoch this host held when it lost the claim. */
  readonly heldEpoch: number

  /**
   * @param runId - The run.
   * @param heldEpoch - The epoch this host's claim bumped `driverEpoch` to.
   * @param detail - What showed the loss (the lease signal, or the stored epoch).
   */
  constructor(runId: string, heldEpoch: number, detail: string, options: { cause?: unknown } = {}) {
    super('claim-lost', `Run ${JSON.stringify(runId)}: this host lost its claim (epoch ${heldEpoch}): ${detail}. Its writes are refused; the run's current driver continues it.`, options)
    this.runId = runId
    this.heldEpoch = heldEpoch
  }
}

/** The lock key of a run's driver lease. Internal. */
export function runDriverLockKey(runId: string): string {
  return `tanstack-ai-sandbox:run-driver:${runId}`
}

/**
 * A held claim. `signal` aborts (reason: a {@link RunClaimLostError}) when the
 * lease is lost or a fence refused a write. Internal.
 */
export interface RunClaim {
  readonly runId: string
  readonly epoch: number
  readonly signal: AbortSignal
  /** True while this host still owns the run: not latched, lease held, stored `driverEpoch` equal to `epoch`. Re-reads the record; latches on the first `false`. */
  stillOwned: () => Promise<boolean>
  /** True once a check failed (the latch). */
  readonly lost: boolean
  /** Latch the loss from outside (the store's engine refused a write at this epoch); aborts `signal`. */
  refuse: (detail: string) => void
}

/** Options of {@link withRunClaim}. Internal. */
export interface WithRunClaimOptions {
  runs: RunStore
  locks: LockStore
  runId: string
  report: Reporter
  /**
   * Looked at under the lease, with the record as it is then, before the
   * epoch is written: return a reason to claim nothing after all (the reaper
   * finds its viewer came back), and `withRunClaim` throws
   * {@link ClaimDeclinedError} without writing anything.
   */
  recheck?: (record: RunRecord) => string | undefined
}

/** `withRunClaim`'s `recheck` declined the claim: nothing was written. Internal. */
export class ClaimDeclinedError extends Error {
  constructor(
    readonly runId: string,
    readonly record: RunRecord,
    detail: string,
  ) {
    super(`run ${runId} was not claimed: ${detail}`)
    this.name = 'ClaimDeclinedError'
  }
}

/**
 * Run `fn` while holding the run: under `locks.withLock(runDriverLockKey(runId))`,
 * after bumping `driverEpoch` (read-modify-write under the lock, confirmed by
 * a re-read). Of several concurrent attaches one holds the lease and drives;
 * the others wait for it. A waiter that gets the lease finds the run finished
 * (`'terminal'`: the usual end) or still running, which means the driver
 * before it is gone (killed, its lease lapsed, or it let the run go): then it
 * claims the next epoch and takes the run over, so an attached client never
 * waits on a driver that died (issue 28, "attachers that lost the race").
 *
 * @throws RunClaimNotAcquiredError `'unknown'` / `'terminal'` / `'superseded'`, without calling `fn`.
 * @throws ClaimDeclinedError when `recheck` declined, without writing or calling `fn`.
 * @throws RunClaimLostError after `fn` settled, when the claim was lost while it ran (its own rejection becomes the `cause`).
 */
export async function withRunClaim<T>(options: WithRunClaimOptions, fn: (claim: RunClaim) => Promise<T>): Promise<T> {
  const { runs, locks, runId, report } = options
  const seen = refuseUnclaimable(runId, await runs.get(runId))
  return locks.withLock(runDriverLockKey(runId), async (leaseSignal) => {
    const latest = await runs.get(runId)
    // A driver that claimed while this one waited held the lease until now: it finished the run (terminal, refused
    // below) or is gone with the run still running, which this one then takes over.
    if (latest !== null && latest.driverEpoch !== seen.driverEpoch && !isTerminalRunStatus(latest.status)) {
      report.warn(`run ${runId}: the driver that claimed it while this host waited (epoch ${latest.driverEpoch ?? 'unset'}) no longer holds it and the run is still running; taking it over`)
    }
    const current = refuseUnclaimable(runId, latest)
    const declined = options.recheck?.(current)
    if (declined !== undefined) throw new ClaimDeclinedError(runId, current, declined)
    if (leaseSignal.aborted) throw new RunClaimNotAcquiredError(runId, 'superseded', { detail: 'the lease was lost before the claim was written' })
    const epoch = (current.driverEpoch ?? 0) + 1
    await runs.update(runId, { driverEpoch: epoch })
    const confirmed = (await runs.get(runId))?.driverEpoch
    if (confirmed !== epoch) {
      if (confirmed === undefined) report.error(`the RunStore did not round-trip driverEpoch for run ${runId}; without it no driver can be fenced, so none drives. Store driverEpoch in your RunStore.update.`)
      throw new RunClaimNotAcquiredError(runId, 'superseded', { detail: `wrote driverEpoch ${epoch}, read back ${confirmed ?? 'unset'}` })
    }
    const claim = new HeldClaim(runs, runId, epoch, leaseSignal)
    activeClaims.set(runId, claim)
    try {
      const result = await fn(claim)
      if (claim.lost) throw claim.lossError()
      return result
    } catch (error) {
      if (claim.lost && !(error instanceof RunClaimLostError)) throw claim.lossError(error)
      throw error
    } finally {
      if (activeClaims.get(runId) === claim) activeClaims.delete(runId)
      claim.dispose()
    }
  })
}

/** The claims this process holds, by run id (one per run: a second claim of a run in one process waits for the lease). */
const activeClaims = new Map<string, RunClaim>()

/**
 * The claim this process holds on `runId` right now (`sandboxRunDriver`, the
 * reaper), or `undefined`. How a run's teardown, which runs inside the drive,
 * learns whether this host still owns the run. Internal.
 */
export function activeRunClaim(runId: string): RunClaim | undefined {
  return activeClaims.get(runId)
}

function refuseUnclaimable(runId: string, record: RunRecord | null): RunRecord {
  if (record === null) throw new RunClaimNotAcquiredError(runId, 'unknown')
  if (isTerminalRunStatus(record.status)) throw new RunClaimNotAcquiredError(runId, 'terminal', { detail: `status ${record.status}` })
  return record
}

class HeldClaim implements RunClaim {
  private readonly controller = new AbortController()
  private readonly onLeaseLost = (): void => {
    this.latch('the lease was lost (the LockStore aborted its signal)')
  }
  private lossDetail: string | undefined
  readonly signal = this.controller.signal

  constructor(
    private readonly runs: RunStore,
    readonly runId: string,
    readonly epoch: number,
    private readonly leaseSignal: AbortSignal,
  ) {
    leaseSignal.addEventListener('abort', this.onLeaseLost, { once: true })
  }

  get lost(): boolean {
    return this.lossDetail !== undefined
  }

  async stillOwned(): Promise<boolean> {
    if (this.lost) return false
    if (this.leaseSignal.aborted) return this.latch('the lease was lost (the LockStore aborted its signal)')
    let stored: number | undefined
    try {
      stored = (await this.runs.get(this.runId))?.driverEpoch
    } catch (error) {
      // Fail closed: a driver that cannot prove it still owns the run must not write it.
      return this.latch(`reading driverEpoch failed (${error instanceof Error ? error.message : String(error)})`)
    }
    if (this.lost) return false
    if (stored !== this.epoch) return this.latch(`the stored driverEpoch is ${stored ?? 'unset'}, not ${this.epoch}`)
    return true
  }

  lossError(cause?: unknown): RunClaimLostError {
    return new RunClaimLostError(this.runId, this.epoch, this.lossDetail ?? 'unknown', cause === undefined ? {} : { cause })
  }

  dispose(): void {
    this.leaseSignal.removeEventListener('abort', this.onLeaseLost)
  }

  refuse(detail: string): void {
    this.latch(detail)
  }

  private latch(detail: string): false {
    if (!this.lost) {
      this.lossDetail = detail
      this.controller.abort(this.lossError())
    }
    return false
  }
}

/**
 * The run's log with its `append` fenced: each append first checks
 * `claim.stillOwned()` and, when it is not, is refused with
 * {@link RunClaimLostError} (the claim latches, so every later append is
 * refused too). When the log is an `EpochFencedStreamDurability`, the append
 * itself goes through `atEpoch(claim.epoch)`, so the engine refuses it too if
 * a successor claimed between the check and the write; that refusal latches
 * the claim the same way, and `close` goes through that view too (the store
 * closes only while the epoch holds, so a superseded driver's teardown never
 * ends the successor's readers). `read`, `snapshot`, `resumeFrom` pass
 * through. Internal.
 */
export function fenceDurability<TOffset extends string>(log: StreamDurability<TOffset>, claim: RunClaim): StreamDurability<TOffset> {
  const writer = isEpochFencedStreamDurability(log) ? log.atEpoch(claim.epoch) : log
  return {
    resumeFrom: () => log.resumeFrom(),
    append: async (chunks) => {
      if (!(await claim.stillOwned())) throw new RunClaimLostError(claim.runId, claim.epoch, 'the append was refused by the epoch fence')
      try {
        return await writer.append(chunks)
      } catch (error) {
        if (!StaleEpochError.isInstance(error)) throw error
        claim.refuse(`the store refused an append at epoch ${claim.epoch} (stored driverEpoch ${error.storedEpoch ?? 'unset'})`)
        throw new RunClaimLostError(claim.runId, claim.epoch, 'the append was refused by the store\'s epoch check', { cause: error })
      }
    },
    read: (offset, signal) => log.read(offset, signal),
    snapshot: () => log.snapshot(),
    // Never refused by the driver's own fence; an epoch-fenced store closes only while this claim's epoch holds.
    close: () => writer.close(),
  }
}

/**
 * The run store with a lost claim's terminal-status `update` suppressed (it
 * resolves without writing, and is reported). When the store is an
 * `EpochFencedRunStore`, a terminal patch is written with
 * `updateAtEpoch(claim.epoch)`, so the engine suppresses it too if a successor
 * claimed between the check and the write. Every other call, and every
 * non-terminal patch, passes through. Internal.
 */
export function fenceRunStore(runs: RunStore, claim: RunClaim, report: Reporter): RunStore {
  const suppressed = (runId: string, status: string): void =>
    report.error(`suppressed the terminal status ${status} of run ${runId}: this host lost its claim (epoch ${claim.epoch}), so it may not finish the run`)
  const fenced: RunStore = {
    createOrResume: (input) => runs.createOrResume(input),
    get: (runId) => runs.get(runId),
    findActiveRun: (threadId) => runs.findActiveRun(threadId),
    update: async (runId, patch) => {
      if (patch.status === undefined || !isTerminalRunStatus(patch.status)) return runs.update(runId, patch)
      if (!(await claim.stillOwned())) return suppressed(runId, patch.status)
      if (!isEpochFencedRunStore(runs)) return runs.update(runId, patch)
      if (await runs.updateAtEpoch(runId, claim.epoch, patch)) return
      claim.refuse(`the store refused the terminal status ${patch.status} at epoch ${claim.epoch}`)
      return suppressed(runId, patch.status)
    },
  }
  if (runs.listByThread) fenced.listByThread = (threadId) => runs.listByThread!(threadId)
  if (runs.listReclaimable) fenced.listReclaimable = (opts) => runs.listReclaimable!(opts)
  return fenced
}

/**
 * Wait until the stored log stops growing: `snapshot()` lengths taken
 * `quietMs` apart are equal. Resolves `true` when quiet, `false` when `signal`
 * aborted first. A failing `snapshot()` rejects. An engine-fenced log
 * (`EpochFencedStreamDurability`) is not waited on: once the claim wrote its
 * epoch, the store itself refuses every append of an earlier one, and an
 * append that landed before is in the log already, which is all the window
 * is for (issue 28: the window was most of a takeover's delay). Internal.
 *
 * @param quietMs - The window, in ms.
 */
export async function awaitLogQuiescence(log: Pick<StreamDurability, 'snapshot'>, quietMs: number, signal: AbortSignal): Promise<boolean> {
  if (isEpochFencedStreamDurability(log as StreamDurability)) return !signal.aborted
  let length = (await log.snapshot()).length
  for (;;) {
    if (!(await sleep(quietMs, signal))) return false
    const next = (await log.snapshot()).length
    if (next === length) return true
    length = next
  }
}

/** Resolves `true` after `ms`, or `false` as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false)
  return new Promise((resolve) => {
    const done = (value: boolean): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      resolve(value)
    }
    const onAbort = (): void => done(false)
    const timer = setTimeout(() => done(true), ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
