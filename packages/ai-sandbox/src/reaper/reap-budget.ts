/**
 * The reaper's time bounds: every call a sweep makes on a store, a provider,
 * a probe or a drive is given up after `runBudgetMs`, so one wedged run never
 * hangs the sweep. A claim given up refuses its own `driverEpoch` write; a
 * drive past its budget ends with `RUN_ERROR` `reap-budget-exceeded`.
 */
import { EventType, RUN_CANCEL_REASON, type RunDriverOptions, type RunRecord, type RunStore, type StreamChunk } from '@tanstack/ai'
import { RunClaimNotAcquiredError, withRunClaim, type RunClaim } from '../durability/claim.js'
import type { Reporter } from '../durability/run-report.js'
import { runExitProbeSchema, type RunExitProbe } from './probe.js'
import type { ReapOptions } from './reap.js'

/** The `RUN_ERROR` code of a finalizing drive stopped at its budget. */
export const REAP_BUDGET_CODE = 'reap-budget-exceeded'

const isFunction = (v: unknown): boolean => typeof v === 'function'

/** `call()`, rejected when it has not settled within `budgetMs` (a wedged store), so one hung listing never hangs the sweep. */
export async function settleWithin<T>(call: () => Promise<T>, budgetMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within runBudgetMs (${budgetMs} ms)`)), budgetMs)
  })
  try {
    return await Promise.race([Promise.resolve().then(call), late])
  } finally {
    clearTimeout(timer)
  }
}

/** `reclaim(record)`, rejected when it has not settled within `budgetMs` (a wedged provider), so one stuck destroy never hangs the sweep. */
export async function reclaimWithin(reclaim: NonNullable<ReapOptions['reclaim']>, record: RunRecord, budgetMs: number): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`reclaim did not settle within runBudgetMs (${budgetMs} ms); the sandbox may still be up`)), budgetMs)
  })
  try {
    return await Promise.race([Promise.resolve().then(() => reclaim(record)), late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * `withRunClaim`, given up when its lease is not granted within `budgetMs`
 * (another driver holds the run for longer). A claim given up refuses its
 * own `driverEpoch` write, so a lease granted after the sweep moved on claims
 * nothing.
 */
export function claimWithin<T>(options: Pick<ReapOptions, 'runs' | 'locks'>, runId: string, budgetMs: number, report: Reporter, recheck: (record: RunRecord) => string | undefined, fn: (claim: RunClaim) => Promise<T>): Promise<T> {
  let started = false
  let gaveUp = false
  const runs: RunStore = {
    ...bind(options.runs),
    update: (id, patch) => (gaveUp && 'driverEpoch' in patch ? Promise.reject(new RunClaimNotAcquiredError(runId, 'superseded', { detail: 'the sweep gave up waiting for the lease' })) : options.runs.update(id, patch)),
  }
  const claimed = withRunClaim({ runs, locks: options.locks, runId, report, recheck }, (claim) => {
    if (gaveUp) throw new RunClaimNotAcquiredError(runId, 'superseded', { detail: 'the sweep gave up waiting for the lease' })
    started = true
    return fn(claim)
  })
  let timer: ReturnType<typeof setTimeout> | undefined
  const waited = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      if (started) return
      gaveUp = true
      reject(new RunClaimNotAcquiredError(runId, 'superseded', { detail: `another driver held the run's lease for longer than runBudgetMs (${budgetMs} ms)` }))
    }, budgetMs)
  })
  claimed.catch(() => {}) // a claim given up settles later, unobserved
  return Promise.race([claimed, waited]).finally(() => clearTimeout(timer))
}

/** The store's methods bound to it, so a spread copy still works on a class instance. */
function bind(runs: RunStore): RunStore {
  const bound: RunStore = {
    createOrResume: (input) => runs.createOrResume(input),
    update: (runId, patch) => runs.update(runId, patch),
    get: (runId) => runs.get(runId),
    findActiveRun: (threadId) => runs.findActiveRun(threadId),
  }
  if (runs.listByThread) bound.listByThread = (threadId) => runs.listByThread!(threadId)
  if (runs.listReclaimable) bound.listReclaimable = (opts) => runs.listReclaimable!(opts)
  return bound
}

/**
 * The finalizing drive, bounded: `drive` gets the claim's signal joined with
 * the budget's (which aborts with `RUN_CANCEL_REASON`, so `withSandbox` stops
 * the agent and destroys its sandbox). Past the budget the stream ends with a
 * `RUN_ERROR` `reap-budget-exceeded`, so `pipeToRunLog` records `failed` and
 * closes the log. A throwing `drive` becomes a stream that throws (`failed`).
 */
export async function* withinBudget(record: RunRecord, drive: RunDriverOptions['drive'], claimSignal: AbortSignal, budgetMs: number, onExceeded: () => void, report: Reporter): AsyncGenerator<StreamChunk> {
  const budget = new AbortController()
  const timer = setTimeout(() => budget.abort(RUN_CANCEL_REASON), budgetMs)
  const exceeded = new Promise<typeof EXCEEDED>((resolve) => budget.signal.addEventListener('abort', () => resolve(EXCEEDED), { once: true }))
  let iterator: AsyncIterator<StreamChunk> | undefined
  let finished = false
  try {
    const stream = drive({ runId: record.runId, threadId: record.threadId, signal: AbortSignal.any([claimSignal, budget.signal]) })
    if (typeof stream !== 'object' || stream === null || !isFunction((stream as unknown as Record<symbol, unknown>)[Symbol.asyncIterator])) {
      throw new TypeError('reapDetachedRuns: drive({ runId, threadId, signal }) must return an AsyncIterable<StreamChunk>, e.g. the stream chat() returns')
    }
    iterator = stream[Symbol.asyncIterator]()
    for (;;) {
      const next = iterator.next()
      const step = await Promise.race([next, exceeded])
      if (step === EXCEEDED) {
        next.catch(() => {})
        onExceeded()
        report.error(`the replay of run ${record.runId} did not end within runBudgetMs (${budgetMs} ms); it is stopped and the run terminalized anyway`)
        yield { type: EventType.RUN_ERROR, timestamp: Date.now(), message: `The reaper stopped this run: its agent had exited, but replaying its journal took longer than ${budgetMs} ms.`, code: REAP_BUDGET_CODE, error: { message: `replay exceeded the reaper's runBudgetMs (${budgetMs} ms)`, code: REAP_BUDGET_CODE } } as StreamChunk
        return
      }
      if (step.done) {
        finished = true
        return
      }
      yield step.value
    }
  } finally {
    clearTimeout(timer)
    if (!finished && iterator) void Promise.resolve(iterator.return?.()).catch(() => {})
  }
}

const EXCEEDED = Symbol('budget-exceeded')

/** `hasFinished(record)`, with a throw, an invalid answer or an answer later than `budgetMs` all `unknown`. */
export async function probeWithin(hasFinished: ReapOptions['hasFinished'], record: RunRecord, budgetMs: number, report: Reporter): Promise<RunExitProbe> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<RunExitProbe>((resolve) => {
    // Not unref'd: a one-shot reaper script whose probe waits on nothing must still get its answer.
    timer = setTimeout(() => resolve({ state: 'unknown', detail: `hasFinished did not answer within runBudgetMs (${budgetMs} ms)` }), budgetMs)
  })
  try {
    const answer = await Promise.race([Promise.resolve().then(() => hasFinished(record)), late])
    const parsed = runExitProbeSchema.safeParse(answer)
    if (parsed.success) return answer
    report.error(`hasFinished answered ${JSON.stringify(answer)?.slice(0, 120)}, which is not a RunExitProbe ({ state: 'finished', exitCode } | { state: 'producing' } | { state: 'unknown' }); counted as unknown`)
    return { state: 'unknown', detail: 'hasFinished gave no RunExitProbe' }
  } catch (error) {
    report.error('hasFinished threw; counted as unknown', error)
    return { state: 'unknown', error }
  } finally {
    clearTimeout(timer)
  }
}
