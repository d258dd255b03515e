/**
 * Sandboxes that ended runs left behind (issue 28): this part of the sweep
 * lists runs that ended in a window and hands each to `reclaim`. Opt-in:
 * threads that keep their sandbox (`destroyOnComplete: false`) must not enable
 * it. Goes beyond spec 000, which retries no reclaim.
 * Design notes: docs/design/reaper.md
 */
import type { RunRecord, RunStore } from '@tanstack/ai'
import type { Reporter } from '../durability/run-report.js'

/** How far back, in ms, a sweep looks for ended runs (24 hours). Default of `reapDetachedRuns`' `endedRunLookbackMs`. */
export const DEFAULT_ENDED_RUN_LOOKBACK_MS = 24 * 60 * 60 * 1000

/**
 * A `RunStore` that lists the runs that ended in a time window: where a sweep
 * looks for sandboxes ended runs left behind. `@tanstack/ai-sandbox-sqlite`
 * and `-postgres` implement it; prove yours with
 * `runDurableRunFieldsConformance`.
 */
export interface EndedRunLister {
  /**
   * Runs with a terminal status (`completed`, `failed`, `aborted`), a
   * `sandboxKey`, and `finishedAfter <= finishedAt <= finishedBefore` (both
   * inclusive), newest `finishedAt` first, at most `limit`.
   */
  listEndedRuns(options: { finishedAfter: number; finishedBefore: number; limit: number }): Promise<RunRecord[]>
}

/** True when `runs` has `listEndedRuns`. */
export function isEndedRunLister(runs: RunStore): runs is RunStore & EndedRunLister {
  return typeof (runs as Partial<EndedRunLister>).listEndedRuns === 'function'
}

/** What the sweep did with one ended run. */
export interface EndedRunEntry {
  readonly runId: string
  readonly threadId: string
  /** The run's terminal status. */
  readonly status: RunRecord['status']
  /** What `reclaim` resolved with (a `ReclaimOutcome` from `sandboxReclaimer`); absent when the thread had an active run, so nothing was tried. */
  readonly reclaim?: unknown
  /** What `reclaim` rejected with, or why the run was skipped. */
  readonly error?: unknown
}

/** What {@link reclaimEndedRuns} needs. */
export interface ReclaimEndedRunsInput {
  runs: RunStore & EndedRunLister
  reclaim: (record: RunRecord) => Promise<unknown>
  now: number
  graceMs: number
  lookbackMs: number
  limit: number
  report: Reporter
}

/**
 * Hand every run that ended between `now - graceMs - lookbackMs` and
 * `now - graceMs` to `reclaim`, unless its thread has a run active now (that
 * run may be setting the same sandbox up). One at a time.
 *
 * @returns One entry per run listed. Never rejects: a failure is an entry, reported.
 */
export async function reclaimEndedRuns(input: ReclaimEndedRunsInput): Promise<EndedRunEntry[]> {
  const { runs, report } = input
  const finishedBefore = input.now - input.graceMs
  let ended: RunRecord[]
  try {
    ended = await runs.listEndedRuns({ finishedAfter: finishedBefore - input.lookbackMs, finishedBefore, limit: input.limit })
  } catch (error) {
    report.error('listing the ended runs (listEndedRuns) failed; no sandbox an ended run left was looked for', error)
    return []
  }
  const entries: EndedRunEntry[] = []
  for (const record of ended) {
    const base = { runId: record.runId, threadId: record.threadId, status: record.status }
    try {
      const active = await runs.findActiveRun(record.threadId)
      if (active !== null) {
        entries.push({ ...base, error: new Error(`thread ${record.threadId} has an active run (${active.runId}); its sandbox is left to it`) })
        continue
      }
      const outcome = await input.reclaim(record)
      if ((outcome as { reclaimed?: unknown } | null)?.reclaimed === true) report.warn(`run ${record.runId} ended ${record.status} but left its sandbox up: reclaimed it`)
      entries.push({ ...base, reclaim: outcome })
    } catch (error) {
      report.error(`reclaiming the sandbox run ${record.runId} left behind failed; the next sweep tries again while the run is in the window`, error)
      entries.push({ ...base, error })
    }
  }
  return entries
}
