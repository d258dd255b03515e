/**
 * `withSandbox`'s durability: the one opt-in (`runs` + `durability`), the
 * per-run `SandboxRunDurability`, the in-memory-lock warning, and the
 * detach-versus-cancel verdict of an abort with its record writes.
 * Invariant: record writes are total (failures go to the logger).
 * Source: spec 000 "Takeover: detached runs and single-writer safety".
 * Design notes: docs/design/with-sandbox.md
 */
import { isCancelRequestedReason, isTerminalRunStatus, wasCancelRequested, type RunStore } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import { z } from 'zod'
import { MAX_TIMER_MS } from '../definition/long-timeout.js'
import type { SandboxDurabilityOptions, SandboxRunDurability } from '../durability/capability.js'
import { activeRunClaim } from '../durability/claim.js'
import { isEpochFencedRunStore } from '../durability/epoch-fence.js'

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null
const hasMethods = (v: unknown, methods: readonly string[]) => isObject(v) && methods.every((m) => typeof v[m] === 'function')

const RUN_STORE_METHODS = ['createOrResume', 'update', 'get', 'findActiveRun'] as const
const LOG_METHODS = ['append', 'snapshot', 'close'] as const

/** The zod shapes of `runs`, `durability` and `detachOnDisconnect` in `withSandbox`'s options. */
export const durabilityOptionShapes = {
  runs: z
    .custom<RunStore>((v) => hasMethods(v, RUN_STORE_METHODS), {
      message: `expected a RunStore (${RUN_STORE_METHODS.join(', ')}), e.g. new InMemoryRunStore() or the runs store chat persistence uses`,
    })
    .optional(),
  durability: z
    .object({
      adapter: z.custom<SandboxDurabilityOptions['adapter']>((v) => hasMethods(v, LOG_METHODS), {
        message: `expected the run's event log (${LOG_METHODS.join(', ')}), e.g. memoryStream(request): the same instance the transport is given`,
      }),
      attach: z.boolean({ error: 'expected true (an attach route) or false' }).optional(),
      attachWaitMs: z.number({ error: 'expected a number of ms' }).int('expected whole ms').positive('expected more than 0 ms').optional(),
      journalDir: z.string({ error: 'expected an absolute folder inside the sandbox' }).startsWith('/', 'expected an absolute folder inside the sandbox, e.g. "/tmp/tanstack-runs"').optional(),
      cancelPollMs: z.number({ error: 'expected a number of ms' }).int('expected whole ms').min(50, 'expected at least 50 ms: every poll reads the run record').max(MAX_TIMER_MS, `expected at most ${MAX_TIMER_MS} ms (a Node timer's limit)`).optional(),
    })
    .strict()
    .optional(),
  detachOnDisconnect: z.boolean({ error: 'expected true (default: a disconnect detaches) or false (a disconnect destroys the sandbox)' }).optional(),
}

/** What `withSandbox` resolved from `runs` + `durability`, shared by every run of the middleware. */
export interface ResolvedDurability {
  /** The capability payload the harness reads (`SandboxDurabilityCapability`). */
  readonly run: SandboxRunDurability
  /** A disconnect with no cancel keeps the sandbox (`detachOnDisconnect`, default `true`). */
  readonly detachable: boolean
  /** Interval of the record poll for a remote cancel, in ms. */
  readonly cancelPollMs: number
}

/**
 * How often, in ms, a live durable run re-reads its run record for a cancel
 * recorded elsewhere (`requestRunCancel`); the default of
 * `withSandbox`'s `durability.cancelPollMs`. A cancel landing on any host
 * stops a run driven on another within about this long.
 */
export const DEFAULT_CANCEL_POLL_MS = 1000

/**
 * The durability of `withSandbox`'s runs, or `undefined` when the run is not
 * durable. Durable ONLY when both `runs` and `durability` are given: a record
 * with no log cannot be replayed, a log with no record cannot be found,
 * claimed or reaped, so one alone is today's behaviour, silently.
 */
export function resolveSandboxDurability(options: { runs?: RunStore | undefined; durability?: SandboxDurabilityOptions | undefined; detachOnDisconnect?: boolean | undefined }): ResolvedDurability | undefined {
  const { runs, durability } = options
  if (!runs || !durability) return undefined
  return {
    run: {
      runs,
      log: durability.adapter,
      attach: durability.attach ?? false,
      ...(durability.attachWaitMs !== undefined ? { attachWaitMs: durability.attachWaitMs } : {}),
      ...(durability.journalDir !== undefined ? { journalDir: durability.journalDir } : {}),
    },
    detachable: options.detachOnDisconnect !== false,
    cancelPollMs: durability.cancelPollMs ?? DEFAULT_CANCEL_POLL_MS,
  }
}

/**
 * Poll `wasCancelRequested(runs, runId)` at once, then every `intervalMs` until stopped, and
 * call `onCancel` once when it answers `true`. Polls never overlap, the timer
 * does not keep the process alive, and a store that cannot be read answers
 * `false` (core's rule), so the poll simply tries again.
 *
 * @returns A stop function (idempotent).
 */
export function watchForCancel(runs: RunStore, runId: string, intervalMs: number, onCancel: () => void): () => void {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const schedule = (delayMs: number): void => {
    if (stopped) return
    timer = setTimeout(() => {
      void wasCancelRequested(runs, runId).then((cancelled) => {
        if (stopped) return
        if (!cancelled) return schedule(intervalMs)
        stopped = true
        onCancel()
      }).catch(() => schedule(intervalMs)) // a poll that failed is a poll that saw no cancel
    }, delayMs)
    timer.unref?.()
  }
  // The first look is at once: a cancel recorded while nobody drove the run (its host died) is seen by the takeover's first step.
  schedule(0)
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}

/**
 * Whether `locks` cannot coordinate hosts: none at all (`ensure` then falls back
 * to a process-lifetime `InMemoryLockStore`, the most in-memory case there is)
 * or an `InMemoryLockStore`.
 */
export function isInMemoryLock(locks: LockStore | undefined): boolean {
  return locks === undefined || locks instanceof InMemoryLockStore
}

/** The warning for durability over an in-memory lock (spec 000 "A real `LockStore` is required"). */
export function inMemoryLockWarning(locks: LockStore | undefined): string {
  const what = locks === undefined ? 'no lock store at all (ensure falls back to a process-lifetime InMemoryLockStore)' : 'an InMemoryLockStore'
  return `withSandbox: durability is wired over ${what}, which cannot coordinate hosts: two replicas can drive one run and duplicate its log. Wire a distributed LockStore with withLocks(...) before withSandbox, or withSandbox(sandbox, { locks }).`
}

/**
 * Whether an abort is a cancel, in either band: the in-process reason
 * (`AbortInfo.cancelRequested`, or the signal's reason is `RUN_CANCEL_REASON`)
 * or the durable record (`wasCancelRequested`, which answers `false` when the
 * store cannot be read, so a cancel degrades into a detach, never a throw).
 */
export async function isCancel(runs: RunStore, runId: string, inProcess: { cancelRequested?: boolean | undefined; reason?: unknown }): Promise<boolean> {
  if (inProcess.cancelRequested === true) return true
  if (typeof inProcess.reason === 'string' && isCancelRequestedReason(inProcess.reason)) return true
  return wasCancelRequested(runs, runId)
}

/**
 * Who this host is to a durable run: the host that started it (its epoch is
 * "unset": no driver has claimed the run), or the driver whose claim is
 * `epoch`. `stillOwned` answers whether that is still so; a host that lost the
 * run (a successor claimed it while this one was paused or cut off) touches
 * nothing of it again. Source: issue 28 "a paused host that wakes up".
 */
export interface RunOwner {
  /** The epoch this host writes at (`undefined`: the starting host's). */
  readonly epoch: number | undefined
  /** Whether `epoch` is known: false for an attach driven without `sandboxRunDriver`'s claim, which then writes unconditionally. */
  readonly fenced: boolean
  /** `false` once another host holds the run; never rejects (a failed read answers `false`). */
  stillOwned(): Promise<boolean>
}

/**
 * This host's {@link RunOwner} for a run. An attach finds the claim its drive
 * runs under (`sandboxRunDriver`, the reaper); one driven without a claim is
 * taken as owned. The host that started the run owns it while the record's
 * `driverEpoch` is unset.
 */
export function runOwner(runs: RunStore, runId: string, attach: boolean): RunOwner {
  if (attach) {
    const claim = activeRunClaim(runId)
    if (!claim) return { epoch: undefined, fenced: false, stillOwned: () => Promise.resolve(true) }
    return { epoch: claim.epoch, fenced: true, stillOwned: () => claim.stillOwned().catch(() => false) }
  }
  return {
    epoch: undefined,
    fenced: true,
    stillOwned: async () => {
      try {
        return (await runs.get(runId))?.driverEpoch === undefined
      } catch {
        return false
      }
    },
  }
}

/** Apply a non-terminal patch as `owner`: conditional on its epoch where the store can check it in one step. */
async function updateAsOwner(runs: RunStore, runId: string, patch: Parameters<RunStore['update']>[1], owner: RunOwner | undefined): Promise<void> {
  if (owner?.fenced && isEpochFencedRunStore(runs)) {
    await runs.updateAtEpoch(runId, owner.epoch, patch)
    return
  }
  await runs.update(runId, patch)
}

/**
 * Write `detachedSince` (epoch ms, now) and `sandboxKey` on the run's record.
 * A run already marked detached keeps its first stamp (the disconnect
 * notification and the teardown of the same detach both call this), so the
 * reaper's TTL counts from when the client left. Nothing is written on a
 * terminal record, nor by a host that no longer owns the run (`owner`; the
 * write is conditional on its epoch where the store supports it). A store
 * failure is logged: the run's teardown has no one to report it to.
 *
 * @returns `false` when the store failed (a read or the write), so the record may lack `detachedSince`; `true` otherwise.
 */
export async function recordDetach(runs: RunStore, runId: string, sandboxKey: string, logger: InternalLogger | undefined, owner?: RunOwner): Promise<boolean> {
  try {
    if (owner && !(await owner.stillOwned())) {
      logger?.sandbox(`withSandbox: run ${runId} is driven by another host now; not recording a detach`)
      return true
    }
    const record = await runs.get(runId)
    if (!record || isTerminalRunStatus(record.status)) return true
    await updateAsOwner(runs, runId, record.detachedSince === undefined ? { detachedSince: Date.now(), sandboxKey } : { sandboxKey }, owner)
    return true
  } catch (error) {
    logger?.errors(`withSandbox: recording the detach of run ${runId} failed`, { error })
    return false
  }
}

/**
 * Write `sandboxKey` on a durable run's record as its sandbox is ensured, not
 * only at a detach: the reaper reclaims a run's sandbox by it, and a run
 * whose host dies with nobody attached (an orphan, see `reapDetachedRuns`'
 * `orphanGraceMs`) is never detached. Skipped on a terminal record, one that
 * has the key already, and by a host that no longer owns the run. Logged on failure.
 */
export async function recordSandboxKey(runs: RunStore, runId: string, sandboxKey: string, logger: InternalLogger | undefined, owner?: RunOwner): Promise<void> {
  try {
    const record = await runs.get(runId)
    if (!record || isTerminalRunStatus(record.status) || record.sandboxKey === sandboxKey) return
    if (owner && !(await owner.stillOwned())) return
    await updateAsOwner(runs, runId, { sandboxKey }, owner)
  } catch (error) {
    logger?.errors(`withSandbox: recording the sandbox key of run ${runId} failed; a sweep that finds the run orphaned cannot reclaim its sandbox`, { error })
  }
}

/**
 * Clear `detachedSince` when the record has it: the run ended here (finished,
 * failed or cancelled), so it is no longer reclaimable work. Not by a host
 * that no longer owns the run. Logged on failure.
 */
export async function clearDetach(runs: RunStore, runId: string, logger: InternalLogger | undefined, owner?: RunOwner): Promise<void> {
  try {
    const record = await runs.get(runId)
    if (record?.detachedSince === undefined) return
    if (owner && !(await owner.stillOwned())) return
    await updateAsOwner(runs, runId, { detachedSince: undefined }, owner)
  } catch (error) {
    logger?.errors(`withSandbox: clearing detachedSince of run ${runId} failed`, { error })
  }
}
