/**
 * `reapDetachedRuns`: one sweep over a `RunStore`'s detached runs, each probed
 * out of band (`hasFinished`): `finished` is finalized under the run claim,
 * expired is terminalized, then its sandbox reclaimed; `producing`/`unknown`
 * is never driven. Total once its options are valid. One file: the sweep and
 * its per-run steps read in order. Design notes: docs/design/reaper.md
 * Source: spec 000 "The reaper ships as a function, not a scheduler", spec 002.
 */
import { EventType, isTerminalRunStatus, type RunDriverOptions, type RunRecord, type RunStatus, type RunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { LockStore } from '@tanstack/ai/locks'
import { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'
import { MAX_TIMER_MS } from '../definition/long-timeout.js'
import { loggerSchema, parseOptions } from '../contracts/validate.js'
import { awaitLogQuiescence, ClaimDeclinedError, DEFAULT_FENCE_QUIET_MS, fenceDurability, fenceRunStore, RunClaimLostError, RunClaimNotAcquiredError } from '../durability/claim.js'
import { pipeToRunLog } from '../durability/run-log.js'
import type { Reporter } from '../durability/run-report.js'
import { DEFAULT_ENDED_RUN_LOOKBACK_MS, isEndedRunLister, reclaimEndedRuns, type EndedRunEntry } from './ended-runs.js'
import { DEFAULT_ORPHAN_GRACE_MS, isLockProbe, isUndetachedRunLister, markOrphansDetached } from './orphans.js'
import type { RunExitProbe } from './probe.js'
import { claimWithin, probeWithin, reclaimWithin, settleWithin, withinBudget } from './reap-budget.js'

/** Most runs one sweep looks at (oldest detach first); the rest wait for the next sweep (`ReapResult.deferred`). Default of `maxRuns`. */
export const DEFAULT_MAX_RUNS = 25

/**
 * How long, in ms, one run's `hasFinished` probe, and separately one
 * finalizing replay, may take (120 s). A probe over budget counts as
 * `unknown`; a replay over budget is stopped and the run terminalized anyway
 * (`budget-exceeded`). Default of `runBudgetMs`.
 */
export const DEFAULT_RUN_BUDGET_MS = 120_000

/** How many runs one sweep works on at once. */
const CONCURRENCY = 4

/** The `RUN_ERROR` codes the reaper ends a run with. */
const EXPIRED_CODE = 'detached-run-expired'

/**
 * What the sweep did with one run.
 *
 * - `finalized`: the probe said the agent exited; the run was driven to its end (the log has the whole transcript), the record is terminal and `reclaim` ran.
 * - `expired`: the TTL passed and the probe did not say `finished`; the record is `failed` (code `detached-run-expired`), the log is closed and `reclaim` ran.
 * - `producing`: the agent is still working and the TTL has not passed; untouched.
 * - `unknown`: the probe could not tell and the TTL has not passed; untouched.
 * - `not-claimed`: another driver holds or finished the run (or took it over mid-sweep); untouched by this sweep.
 * - `budget-exceeded`: the probe said `finished` but the replay did not end within `runBudgetMs`; it was stopped, the record IS terminal (`failed`, code `reap-budget-exceeded`), the log IS closed and `reclaim` ran. A misbehaving journal read, translation or log.
 * - `reclaim-failed`: the record is terminal and the transcript saved, but `reclaim` rejected: the sandbox may still be up, and no later sweep retries it (the run is no longer listed).
 */
export type ReapRunOutcome = 'finalized' | 'expired' | 'producing' | 'unknown' | 'not-claimed' | 'budget-exceeded' | 'reclaim-failed'

/** The ordered outcome names (the keys of `ReapResult.outcomes`). */
const OUTCOMES: readonly ReapRunOutcome[] = ['finalized', 'expired', 'producing', 'unknown', 'not-claimed', 'budget-exceeded', 'reclaim-failed']

/** One run of a sweep. */
export interface ReapRunEntry {
  readonly runId: string
  readonly threadId: string
  readonly outcome: ReapRunOutcome
  /** What `hasFinished` answered (an invalid answer, a throw or a probe over budget is `unknown`). */
  readonly probe: RunExitProbe
  /** Whether `detachedRunTtlMs` had passed since `detachedSince` at the sweep's `now`. */
  readonly expired: boolean
  /** The record's status after the sweep, when it was read. */
  readonly status?: RunStatus
  /** What `reclaim` resolved with (e.g. a `ReclaimOutcome`), when it ran and resolved. */
  readonly reclaim?: unknown
  /** Set if and only if the replay exceeded `runBudgetMs` and the run was terminalized anyway; kept when `reclaim-failed` overwrote `budget-exceeded`. */
  readonly terminalizedAnyway?: true
  /** Why a run was not claimed, or what `reclaim` rejected with. */
  readonly error?: unknown
}

/** What one sweep did. */
export interface ReapResult {
  /** How many runs ended in each outcome (every key present, 0 when none). */
  readonly outcomes: Readonly<Record<ReapRunOutcome, number>>
  /** One entry per run looked at, oldest detach first. */
  readonly entries: readonly ReapRunEntry[]
  /** Detached runs `listReclaimable` returned but this sweep left for the next one (over `maxRuns`). */
  readonly deferred: number
  /** Runs this sweep found orphaned (running, never detached, no host holding their lease) and marked detached before it listed the detached runs; see `orphanGraceMs`. */
  readonly orphans: readonly string[]
  /** The ended runs whose sandbox this sweep handed to `reclaim` (see `endedRunGraceMs`); empty when that option is left out. */
  readonly ended: readonly EndedRunEntry[]
  /** Set when `listReclaimable` itself failed, or the run store has none (a `SandboxConfigError` naming `reapDetachedRuns.runs.listReclaimable`); `entries` is empty then. */
  readonly error?: unknown
}

/** Options of {@link reapDetachedRuns}. */
export interface ReapOptions<TOffset extends string = string> {
  /** The SAME `RunStore` the chat routes use. Its `listReclaimable` is the sweep's only source of detached runs: without it (it is optional in core) the sweep resolves with nothing swept and `error` set. */
  runs: RunStore
  /** The same distributed `LockStore` `withSandbox` and `sandboxRunDriver` get. */
  locks: LockStore
  /** A per-run FACTORY `(runId) => StreamDurability` resolving the SAME log the transport and the attach route use. */
  durability: (runId: string) => StreamDurability<TOffset>
  /**
   * REQUIRED. Whether a run's agent exited, learned out of band (usually
   * `probeRunExit` over the run's resumed sandbox). Anything it cannot answer
   * must be `{ state: 'unknown' }`, never `finished`. A throw counts as `unknown`.
   */
  hasFinished: (record: RunRecord) => Promise<RunExitProbe>
  /** The same `drive` the attach route passes `sandboxRunDriver`: `chat()` with `withSandbox(sandbox, { runs, durability: { adapter, attach: true } })`. Called only for a `finished` probe. */
  drive: RunDriverOptions['drive']
  /** The sweep's clock, epoch ms (e.g. `Date.now()`). */
  now: number
  /** REQUIRED, and the ONLY detached-run TTL: a run detached at least this many ms before `now` is expired unless its probe says `finished`. */
  detachedRunTtlMs: number
  /** Tear down a terminal run's sandbox, e.g. `sandboxReclaimer({ provider, instances })`. It must REJECT on failure (that is `reclaim-failed`). Default: none (sandboxes are left). */
  reclaim?: (record: RunRecord) => Promise<unknown>
  /** Most runs per sweep. Default {@link DEFAULT_MAX_RUNS}. */
  maxRuns?: number
  /** Budget in ms of one probe, of the wait for one run's lease, of one finalizing replay and of one `reclaim` (one that has not settled by then is `reclaim-failed`). At most 2^31−1 (a Node timer's limit). Default {@link DEFAULT_RUN_BUDGET_MS}. */
  runBudgetMs?: number
  /** The claim's quiescence window in ms: the stored log must stop growing this long before the sweep's first write. Pass the attach route's `sandboxRunDriver` value (keep it above your lock's lease renewal interval). Default `DEFAULT_FENCE_QUIET_MS` (5000). */
  fenceQuietMs?: number
  /**
   * Orphans (issue 28): a run still `running` that was never detached, started
   * at least this many ms before `now`, and whose driver lease nobody holds
   * (its host died with no client attached) is marked detached at `now`
   * before the sweep lists the detached runs, so it is finalized, expired
   * (the TTL counted from `now`) and reclaimed like one. Needs the run
   * store's `listUndetachedRuns` and the lock store's `isHeld` (the SQLite and
   * PostgreSQL stores have both); without them no orphan is looked for.
   * Default `DEFAULT_ORPHAN_GRACE_MS` (60 s).
   */
  orphanGraceMs?: number
  /**
   * Sandboxes ended runs left behind (issue 28): a run recorded `completed`,
   * `failed` or `aborted` at least this many ms before `now` (and at most
   * `endedRunLookbackMs` before that) is handed to `reclaim`, unless its
   * thread has an active run. `sandboxReclaimer` leaves a sandbox that is
   * gone already (`unknown-key`) or that a later run took (`reused`). It
   * catches a host that died between recording the end and destroying the
   * sandbox, a destroy that failed, and an earlier `reclaim-failed`. Opt-in:
   * leave it out when threads keep their sandbox between runs
   * (`destroyOnComplete: false`, `keepAlive`). Needs `reclaim` and the run
   * store's `listEndedRuns` (the SQLite and PostgreSQL stores have it).
   * Default: not swept.
   */
  endedRunGraceMs?: number
  /** How far back before `now - endedRunGraceMs`, in ms, ended runs are looked at. Default `DEFAULT_ENDED_RUN_LOOKBACK_MS` (24 h). */
  endedRunLookbackMs?: number
  /** Receives every failure on `errors` (`reaper: ` lines) and one `warn` per run made terminal or found orphaned. */
  logger?: InternalLogger
}

const isFunction = (v: unknown): boolean => typeof v === 'function'
const hasMethods = (v: unknown, methods: readonly string[]): boolean => typeof v === 'object' && v !== null && methods.every((m) => isFunction((v as Record<string, unknown>)[m]))

const optionsSchema = z
  .object({
    runs: z.custom<RunStore>((v) => hasMethods(v, ['createOrResume', 'update', 'get']), { message: "expected a RunStore (createOrResume, update, get, and listReclaimable to have anything to sweep): the SAME one the chat routes use, e.g. new InMemoryRunStore() from '@tanstack/ai'" }),
    locks: z.custom<LockStore>((v) => hasMethods(v, ['withLock']), { message: 'expected the LockStore withSandbox and sandboxRunDriver get (withLock(key, fn)); a distributed one across hosts' }),
    durability: z.custom<(runId: string) => StreamDurability>(isFunction, { message: 'expected a per-run factory (runId) => StreamDurability resolving the SAME log the transport uses, e.g. (runId) => memoryStream({ runId })' }),
    hasFinished: z.custom<ReapOptions['hasFinished']>(isFunction, {
      message: 'expected hasFinished(record) => Promise<RunExitProbe>; it is REQUIRED: the sweep must never drive a run to learn whether it finished. Resume the run\'s sandbox and return probeRunExit({ handle, runId: record.runId }), or { state: "unknown" } when you cannot',
    }),
    drive: z.custom<RunDriverOptions['drive']>(isFunction, { message: 'expected drive({ runId, threadId, signal }) returning the chat() stream: the same drive the attach route gives sandboxRunDriver' }),
    now: z.number('expected the sweep clock in epoch ms, e.g. Date.now()').int('expected whole ms').positive('expected epoch ms, e.g. Date.now()'),
    detachedRunTtlMs: z
      .number('expected the detached-run TTL in ms, e.g. 30 * 60 * 1000; it is REQUIRED and the only detached-run TTL (nothing derives it from withSandbox)')
      .min(0, 'expected 0 ms or more')
      .max(Number.MAX_SAFE_INTEGER, `expected at most ${Number.MAX_SAFE_INTEGER} ms`)
      .int('expected whole ms'),
    reclaim: z.custom<NonNullable<ReapOptions['reclaim']>>(isFunction, { message: 'expected reclaim(record) => Promise, e.g. sandboxReclaimer({ provider: sandbox.provider, instances })' }).optional(),
    maxRuns: z.number('expected a number of runs').int('expected a whole number of runs').min(1, 'expected at least 1 run').optional(),
    runBudgetMs: z.number('expected the per-run budget in ms').int('expected whole ms').min(1, 'expected at least 1 ms').max(MAX_TIMER_MS, `expected at most ${MAX_TIMER_MS} ms (a Node timer's limit)`).optional(),
    fenceQuietMs: z.number("expected fenceQuietMs in ms as a number, the same as sandboxRunDriver's").int('expected a whole number of ms').min(0, 'expected 0 ms or more').max(MAX_TIMER_MS, `expected at most ${MAX_TIMER_MS} ms (a Node timer's limit)`).optional(),
    orphanGraceMs: z.number('expected orphanGraceMs in ms as a number, e.g. 60000').int('expected a whole number of ms').min(0, 'expected 0 ms or more').optional(),
    endedRunGraceMs: z.number('expected endedRunGraceMs in ms as a number, e.g. 600000').int('expected a whole number of ms').min(0, 'expected 0 ms or more').optional(),
    endedRunLookbackMs: z.number('expected endedRunLookbackMs in ms as a number, e.g. 86400000').int('expected a whole number of ms').min(1, 'expected at least 1 ms').optional(),
    logger: loggerSchema,
  })
  .strict()

/**
 * Sweep the detached runs once: first mark orphans detached (runs whose host
 * died with nobody attached; see `orphanGraceMs`), then list the detached runs
 * (`runs.listReclaimable({ now, ttlMs: 0 })`, oldest first, at most
 * `maxRuns`), probe each with `hasFinished`, then per run (and last, with
 * `endedRunGraceMs`, reclaim the sandboxes runs that ended left behind):
 *
 * | probe       | TTL passed | what happens                                              | outcome       |
 * | ----------- | ---------- | --------------------------------------------------------- | ------------- |
 * | `finished`  | either     | claim, drive to the end (`drive` + `pipeToRunLog`), reclaim | `finalized` (`budget-exceeded` past `runBudgetMs`) |
 * | `producing` | no         | nothing                                                   | `producing`   |
 * | `unknown`   | no         | nothing                                                   | `unknown`     |
 * | not `finished` | yes     | claim, record `failed` (`detached-run-expired`), log closed, reclaim | `expired` |
 *
 * "Expired" is decided again once the sweep holds the run's lease, from the
 * record as it is then: a viewer that re-attached, or left again with a
 * fresh `detachedSince`, while the sweep waited keeps its run (`producing` /
 * `unknown`, nothing written). A claim refused or lost (another driver holds or finished the run, or its
 * lease stays held past `runBudgetMs`) is `not-claimed`; a `reclaim` that
 * rejects turns the outcome into `reclaim-failed`. The claim is
 * `sandboxRunDriver`'s: a lease over the whole drive, a `driverEpoch` bump,
 * the quiescence window (`fenceQuietMs`, default `DEFAULT_FENCE_QUIET_MS`, 5 s) before the first
 * append, and fenced appends and terminal
 * writes. Nothing schedules it: call it from a cron route, a queue consumer,
 * a Durable Object `alarm()` or a guarded `setInterval`.
 *
 * @param options - {@link ReapOptions}.
 * @returns The sweep's {@link ReapResult}. Never rejects: failures are entries, logged to `logger.errors`; a run store without `listReclaimable` resolves an empty sweep with `error` set (spec 000: it is optional and feature-detected, and the sweep resolves rather than rejects).
 * @throws SandboxConfigError `reapDetachedRuns.<field>` (synchronously, before anything runs) for a missing or mistyped option, e.g. no `hasFinished`, no `detachedRunTtlMs`, or `orphanGraceMs` / `endedRunGraceMs` with stores that cannot do what they ask.
 * @example
 * ```ts
 * const result = await reapDetachedRuns({ runs, locks, durability: (runId) => memoryStream({ runId }), hasFinished, drive, now: Date.now(), detachedRunTtlMs: 30 * 60 * 1000, reclaim: sandboxReclaimer({ provider: sandbox.provider, instances }) })
 * console.log(result.outcomes) // { finalized: 1, expired: 0, producing: 2, ... }
 * ```
 */
export function reapDetachedRuns<TOffset extends string = string>(options: ReapOptions<TOffset>): Promise<ReapResult> {
  parseOptions(optionsSchema, options, 'reapDetachedRuns')
  if (options.orphanGraceMs !== undefined && !(isUndetachedRunLister(options.runs) && isLockProbe(options.locks))) {
    const missing = isUndetachedRunLister(options.runs) ? 'locks.isHeld' : 'runs.listUndetachedRuns'
    throw new SandboxConfigError(
      `reapDetachedRuns.${missing}`,
      `Invalid option reapDetachedRuns.orphanGraceMs: looking for orphaned runs needs the run store's listUndetachedRuns({ startedBefore, limit }) and the lock store's isHeld(key), and ${missing} is missing. Use the SQLite or PostgreSQL stores, implement both, or leave orphanGraceMs out.`,
    )
  }
  if (options.endedRunGraceMs !== undefined && (options.reclaim === undefined || !isEndedRunLister(options.runs))) {
    const missing = options.reclaim === undefined ? 'reclaim' : 'runs.listEndedRuns'
    throw new SandboxConfigError(
      `reapDetachedRuns.${missing}`,
      `Invalid option reapDetachedRuns.endedRunGraceMs: reclaiming the sandboxes ended runs left behind needs reclaim (e.g. sandboxReclaimer({ provider, instances })) and the run store's listEndedRuns({ finishedAfter, finishedBefore, limit }), and ${missing} is missing. Use the SQLite or PostgreSQL stores and pass reclaim, or leave endedRunGraceMs out.`,
    )
  }
  return sweep(options as unknown as ReapOptions).catch((error: unknown) => {
    // Every step below is guarded; this is the last line of totality, for a bug in the sweep itself.
    reapReporter(options.logger, '*').error('the sweep failed unexpectedly', error)
    return { outcomes: tally([]), entries: [], deferred: 0, orphans: [], ended: [], error }
  })
}

async function sweep(options: ReapOptions): Promise<ReapResult> {
  const { runs, locks, now, logger } = options
  if (!isFunction(runs.listReclaimable)) {
    // Optional in core's RunStore and feature-detected (spec 000): a store without it has nothing to sweep, and the sweep still resolves.
    const error = new SandboxConfigError(
      'reapDetachedRuns.runs.listReclaimable',
      'The RunStore has no listReclaimable({ now, ttlMs }): it is the only way the sweep finds detached runs, so nothing was swept. Implement it (prove it with runDurableRunFieldsConformance) or use a store that has it.',
    )
    reapReporter(logger, '*').error('the run store cannot be reaped', error)
    return { outcomes: tally([]), entries: [], deferred: 0, orphans: [], ended: [], error }
  }
  const maxRuns = options.maxRuns ?? DEFAULT_MAX_RUNS
  const orphans =
    isUndetachedRunLister(runs) && isLockProbe(locks)
      ? await markOrphansDetached({ runs, locks, now, graceMs: options.orphanGraceMs ?? DEFAULT_ORPHAN_GRACE_MS, limit: maxRuns, report: reapReporter(logger, '*') })
      : []
  let listed: RunRecord[]
  try {
    listed = await settleWithin(() => runs.listReclaimable!({ now, ttlMs: 0 }), options.runBudgetMs ?? DEFAULT_RUN_BUDGET_MS, 'listReclaimable')
  } catch (error) {
    reapReporter(logger, '*').error('listing the detached runs (listReclaimable) failed; nothing was swept', error)
    return { outcomes: tally([]), entries: [], deferred: 0, orphans, ended: [], error }
  }
  const candidates = listed.filter((record) => record.status === 'running' && record.detachedSince !== undefined).sort((a, b) => a.detachedSince! - b.detachedSince!)
  const picked = candidates.slice(0, maxRuns)
  const entries = await pool(picked, CONCURRENCY, (record) => reapOne(record, options))
  const budgetMs = options.runBudgetMs ?? DEFAULT_RUN_BUDGET_MS
  const ended =
    options.endedRunGraceMs !== undefined && options.reclaim && isEndedRunLister(runs)
      ? await reclaimEndedRuns({
          runs,
          reclaim: (record) => reclaimWithin(options.reclaim!, record, budgetMs),
          now,
          graceMs: options.endedRunGraceMs,
          lookbackMs: options.endedRunLookbackMs ?? DEFAULT_ENDED_RUN_LOOKBACK_MS,
          limit: maxRuns,
          report: reapReporter(logger, '*'),
        })
      : []
  return { outcomes: tally(entries), entries, deferred: candidates.length - picked.length, orphans, ended }
}

function tally(entries: readonly ReapRunEntry[]): Record<ReapRunOutcome, number> {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<ReapRunOutcome, number>
  for (const entry of entries) counts[entry.outcome]++
  return counts
}

/** `work` over `items`, at most `limit` at once, results in the order of `items`. */
async function pool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return results
}

/** One run of the sweep. Never rejects. */
async function reapOne(record: RunRecord, options: ReapOptions): Promise<ReapRunEntry> {
  const report = reapReporter(options.logger, record.runId)
  const budgetMs = options.runBudgetMs ?? DEFAULT_RUN_BUDGET_MS
  const expired = isExpired(record, options)
  const base = { runId: record.runId, threadId: record.threadId, expired }
  const probe = await probeWithin(options.hasFinished, record, budgetMs, report)
  if (probe.state !== 'finished' && !expired) return { ...base, outcome: probe.state, probe }
  const log = await openLog(options, record.runId, report)
  if (!log) return { ...base, outcome: 'not-claimed', probe, error: new Error(`the run log of ${record.runId} could not be opened`) }

  const finalize = probe.state === 'finished'
  let budgetExceeded = false
  let driven: RunRecord | null
  try {
    // Decided again under the lease, from the record as it is then (issue 29): a viewer that came back, or left
    // again with a fresh detachedSince, while the sweep waited keeps its run.
    const recheck = (current: RunRecord): string | undefined =>
      finalize || isExpired(current, options) ? undefined : current.detachedSince === undefined ? 'a viewer re-attached while the sweep waited for its lease' : `it was detached again at ${current.detachedSince}, within detachedRunTtlMs`
    driven = await claimWithin(options, record.runId, budgetMs, report, recheck, async (claim) => {
      // As sandboxRunDriver: the stored log must stop growing before the first append, so a predecessor's last append has landed.
      const quiet = await awaitLogQuiescence(log, options.fenceQuietMs ?? DEFAULT_FENCE_QUIET_MS, claim.signal)
      if (!quiet) throw claim.signal.reason instanceof RunClaimLostError ? claim.signal.reason : new RunClaimLostError(record.runId, claim.epoch, 'lost while waiting for the log to go quiet')
      const stream = finalize ? withinBudget(record, options.drive, claim.signal, budgetMs, () => (budgetExceeded = true), report) : expiredStream(options.detachedRunTtlMs)
      return pipeToRunLog(stream, {
        runs: fenceRunStore(options.runs, claim, report),
        durability: fenceDurability(log, claim),
        runId: record.runId,
        threadId: record.threadId,
        signal: claim.signal,
        ...(options.logger ? { logger: options.logger } : {}),
      })
    })
  } catch (error) {
    // Only a run that was not finished is declined: left as a sweep leaves any run within its TTL.
    if (error instanceof ClaimDeclinedError) return { ...base, expired: false, outcome: probe.state === 'producing' ? 'producing' : 'unknown', probe, status: error.record.status }
    if (!RunClaimNotAcquiredError.isInstance(error) && !RunClaimLostError.isInstance(error)) report.error('claiming the run failed', error)
    return { ...base, outcome: 'not-claimed', probe, error, ...(await statusOf(options.runs, record.runId)) }
  }
  const status = driven?.status
  if (status === undefined || !isTerminalRunStatus(status)) {
    // A non-terminal end (an interrupt pause, a record the store lost): not this sweep's to reclaim.
    return { ...base, outcome: 'not-claimed', probe, ...(status ? { status } : {}) }
  }
  const outcome: ReapRunOutcome = budgetExceeded ? 'budget-exceeded' : finalize ? 'finalized' : 'expired'
  report.warn(`run ${record.runId} ${outcome === 'expired' ? `expired (detached for ${options.now - record.detachedSince!} ms)` : outcome === 'finalized' ? 'finalized: its agent had exited' : `was terminalized anyway: its replay took longer than runBudgetMs (${budgetMs} ms)`}; record ${status}`)
  const flags = budgetExceeded ? { terminalizedAnyway: true as const } : {}
  if (!options.reclaim) return { ...base, outcome, probe, status, ...flags }
  try {
    const reclaimed = await reclaimWithin(options.reclaim, driven!, budgetMs)
    return { ...base, outcome, probe, status, reclaim: reclaimed, ...flags }
  } catch (error) {
    report.error(`reclaiming the sandbox of run ${record.runId} failed; its transcript is saved but the sandbox may still be up, and no later sweep retries it`, error)
    return { ...base, outcome: 'reclaim-failed', probe, status, error, ...flags }
  }
}

/** Whether the run's TTL passed at the sweep's `now`: detached, for at least `detachedRunTtlMs`. */
function isExpired(record: RunRecord, options: ReapOptions): boolean {
  return record.detachedSince !== undefined && options.now - record.detachedSince >= options.detachedRunTtlMs
}

/** The whole stream of an expired run: one terminal `RUN_ERROR`, so `pipeToRunLog` records `failed` and closes the log. */
async function* expiredStream(ttlMs: number): AsyncGenerator<StreamChunk> {
  const message = `The reaper expired this run: it stayed detached longer than detachedRunTtlMs (${ttlMs} ms) and its agent was not seen to finish.`
  yield { type: EventType.RUN_ERROR, timestamp: Date.now(), message, code: EXPIRED_CODE, error: { message, code: EXPIRED_CODE } } as StreamChunk
}

async function openLog(options: ReapOptions, runId: string, report: Reporter): Promise<StreamDurability | undefined> {
  try {
    return options.durability(runId)
  } catch (error) {
    report.error('resolving the run log failed', error)
    return undefined
  }
}

async function statusOf(runs: RunStore, runId: string): Promise<{ status?: RunStatus }> {
  try {
    const record = await runs.get(runId)
    return record ? { status: record.status } : {}
  } catch {
    return {}
  }
}

/** The sweep's reporter: `reaper: ` lines with the run id; never throws, even with a throwing logger. */
function reapReporter(logger: InternalLogger | undefined, runId: string): Reporter {
  const call = (fn: () => void): void => {
    try {
      fn()
    } catch {
      // The logger itself failed: nowhere left to report, and the sweep stays total.
    }
  }
  return {
    error: (message, error) => call(() => logger?.errors(`reaper: ${message}`, { runId, ...(error === undefined ? {} : { error }) })),
    warn: (message) => call(() => logger?.warn?.(`reaper: ${message}`, { runId })),
  }
}
