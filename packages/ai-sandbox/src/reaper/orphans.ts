/**
 * Orphaned runs: a `running` run never detached whose driver lease nobody
 * holds has no live host; the sweep marks it detached at its clock
 * (conditional on `driverEpoch`) and handles it like any detached run.
 * Needs `listUndetachedRuns` and `isHeld`, feature-detected. Goes beyond spec
 * 000 (issue 28, "a crash nobody returns to"). Design notes: docs/design/reaper.md
 */
import type { RunRecord, RunStore } from '@tanstack/ai'
import type { LockStore } from '@tanstack/ai/locks'
import { runDriverLockKey } from '../durability/claim.js'
import { isEpochFencedRunStore } from '../durability/epoch-fence.js'
import type { Reporter } from '../durability/run-report.js'

/**
 * How long, in ms, a run must have been running before a sweep may take it
 * for an orphan (60 s): the host that started it takes its driver lease
 * while `withSandbox` sets up, a moment after the route created the record.
 * Default of `reapDetachedRuns`' `orphanGraceMs`.
 */
export const DEFAULT_ORPHAN_GRACE_MS = 60_000

/**
 * A `RunStore` that lists the runs still `running` that were never marked
 * detached (`detachedSince` unset): where a sweep looks for orphans.
 * `@tanstack/ai-sandbox-sqlite` and `-postgres` implement it; prove yours
 * with `runDurableRunFieldsConformance`.
 */
export interface UndetachedRunLister {
  /**
   * Runs with `status === 'running'`, `detachedSince` unset and
   * `startedAt <= startedBefore` (inclusive), oldest `startedAt` first, at
   * most `limit`.
   */
  listUndetachedRuns(options: { startedBefore: number; limit: number }): Promise<RunRecord[]>
}

/**
 * A `LockStore` that can tell whether a key is held right now (a lease that
 * has not expired), without taking it. `@tanstack/ai-sandbox-sqlite` and
 * `-postgres` implement it.
 */
export interface LockProbe {
  /** True while some holder's lease on `key` has not run out. */
  isHeld(key: string): Promise<boolean>
}

/** True when `runs` has `listUndetachedRuns`. */
export function isUndetachedRunLister(runs: RunStore): runs is RunStore & UndetachedRunLister {
  return typeof (runs as Partial<UndetachedRunLister>).listUndetachedRuns === 'function'
}

/** True when `locks` has `isHeld`. */
export function isLockProbe(locks: LockStore): locks is LockStore & LockProbe {
  return typeof (locks as Partial<LockProbe>).isHeld === 'function'
}

/** What {@link markOrphansDetached} needs. */
export interface MarkOrphansInput {
  runs: RunStore & UndetachedRunLister
  locks: LockStore & LockProbe
  now: number
  graceMs: number
  limit: number
  report: Reporter
}

/**
 * Mark every orphan among the long-running, never-detached runs detached
 * (`detachedSince: now`). A run whose lease is held, or whose `driverEpoch`
 * moved between the look and the write (a host claimed it), is left alone.
 *
 * @returns The ids of the runs marked. Never rejects: a failure is reported and the run skipped.
 */
export async function markOrphansDetached(input: MarkOrphansInput): Promise<string[]> {
  const { runs, locks, now, report } = input
  let candidates: RunRecord[]
  try {
    candidates = await runs.listUndetachedRuns({ startedBefore: now - input.graceMs, limit: input.limit })
  } catch (error) {
    report.error('listing the runs never detached (listUndetachedRuns) failed; no orphan was looked for', error)
    return []
  }
  const marked: string[] = []
  for (const record of candidates) {
    if (record.status !== 'running' || record.detachedSince !== undefined) continue
    try {
      if (await locks.isHeld(runDriverLockKey(record.runId))) continue
      const patch = { detachedSince: now }
      const applied = isEpochFencedRunStore(runs) ? await runs.updateAtEpoch(record.runId, record.driverEpoch, patch) : (await runs.update(record.runId, patch), true)
      if (!applied) continue
      marked.push(record.runId)
      report.warn(`run ${record.runId} is running but no host holds its driver lease and nobody detached it (its host died with no client attached): marked detached at ${now}, so the sweep finalizes, expires and reclaims it like any detached run`)
    } catch (error) {
      report.error(`looking at run ${record.runId} for an orphan failed; it is left for the next sweep`, error)
    }
  }
  return marked
}
