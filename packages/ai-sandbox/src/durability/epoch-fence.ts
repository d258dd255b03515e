/**
 * Engine-enforced epoch fencing: the optional store methods that turn the
 * driver's check-then-write fence (spec 002: "not airtight … needs a
 * compare-and-set") into a compare-and-set the database itself performs.
 * A store that has them refuses a superseded writer's append and terminal
 * update where the data lives; one without them keeps the spec's fence.
 * Owns the two interfaces, their feature tests and `StaleEpochError`.
 */
import type { RunStore, StreamDurability } from '@tanstack/ai'
import { SandboxError } from '../contracts/errors.js'

/** The patch `RunStore.update` takes. */
export type RunRecordPatch = Parameters<RunStore['update']>[1]

/**
 * A `RunStore` that can apply a patch only while the run's stored
 * `driverEpoch` still equals the writer's epoch, in one atomic step of its
 * engine (a conditional UPDATE, one transaction).
 *
 * `epoch` `undefined` means "no driver has claimed the run": the patch applies
 * only while the stored `driverEpoch` is unset. That is the epoch of the host
 * that started the run (spec 000: the POST route).
 */
export interface EpochFencedRunStore extends RunStore {
  /**
   * Apply `patch` (the key-presence rule of `update`) only when the stored
   * `driverEpoch` equals `epoch` (`undefined`: is unset).
   *
   * @returns `true` when the patch was applied, `false` when it was refused
   *   (another epoch holds the run) or the run has no record.
   */
  updateAtEpoch(runId: string, epoch: number | undefined, patch: RunRecordPatch): Promise<boolean>
}

/**
 * A `StreamDurability` whose engine checks the writer's epoch on every
 * append: `atEpoch(epoch)` returns a view of the same log whose `append`
 * stores its batch only while the run's stored `driverEpoch` equals `epoch`,
 * checked in the transaction that stores it, and otherwise stores nothing
 * and rejects with {@link StaleEpochError}.
 *
 * The view's `close()` is checked the same way, but a refused close resolves
 * without closing (teardowns have no one to tell): a writer that lost the run
 * must not end the readers of the run its successor drives.
 *
 * The plain log (no `atEpoch`) appends and closes at epoch `undefined`: once a
 * driver has claimed the run, only a view at the claimed epoch may append or
 * close. A log of a run with no record at all appends and closes freely.
 */
export interface EpochFencedStreamDurability<TOffset extends string = string> extends StreamDurability<TOffset> {
  /**
   * A view of this log whose appends (and `close`) are checked against
   * `epoch`. Reads, `snapshot` and `resumeFrom` are the log's own. (Spec 000
   * keeps `close` outside the driver's own fence so a lost claim cannot park
   * tailers forever; the engine's check refuses a close only while another
   * epoch holds the run, whose driver closes it.)
   *
   * @param epoch - The writer's epoch (`RunRecord.driverEpoch` its claim wrote), or `undefined` for the run's first host.
   */
  atEpoch(epoch: number | undefined): StreamDurability<TOffset>
}

/**
 * The engine refused a write because the run's stored `driverEpoch` is not
 * the writer's: another driver claimed the run since. Nothing of the refused
 * batch or patch was stored. An ordinary outcome of a takeover.
 *
 * @example
 * ```ts
 * if (error instanceof StaleEpochError) console.log(`run ${error.runId}: epoch ${error.epoch} is stale, stored ${error.storedEpoch}`)
 * ```
 */
export class StaleEpochError extends SandboxError<'stale-epoch'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/StaleEpochError'
  /** The run. */
  readonly runId: string
  /** The writer's epoch (`undefined`: the run's first host). */
  readonly epoch: number | undefined
  /** The `driverEpoch` stored when the write was refused. */
  readonly storedEpoch: number | undefined

  /**
   * @param runId - The run.
   * @param epoch - The writer's epoch.
   * @param storedEpoch - The stored `driverEpoch`.
   */
  constructor(runId: string, epoch: number | undefined, storedEpoch: number | undefined, options: { cause?: unknown } = {}) {
    super('stale-epoch', `Run ${JSON.stringify(runId)}: the write at epoch ${epoch ?? 'unset'} was refused by the store, whose driverEpoch is ${storedEpoch ?? 'unset'}; another driver holds the run, nothing was stored.`, options)
    this.runId = runId
    this.epoch = epoch
    this.storedEpoch = storedEpoch
  }
}

/** True when `runs` has `updateAtEpoch` (see {@link EpochFencedRunStore}). */
export function isEpochFencedRunStore(runs: RunStore): runs is EpochFencedRunStore {
  return typeof (runs as Partial<EpochFencedRunStore>).updateAtEpoch === 'function'
}

/** True when `log` has `atEpoch` (see {@link EpochFencedStreamDurability}). */
export function isEpochFencedStreamDurability<TOffset extends string>(log: StreamDurability<TOffset>): log is EpochFencedStreamDurability<TOffset> {
  return typeof (log as Partial<EpochFencedStreamDurability<TOffset>>).atEpoch === 'function'
}
