/**
 * The end of a run: its terminal hooks (`onFinish`, `onError`; `onAbort` is
 * in `./run-abort.ts`) apply the lifecycle (keep the sandbox for the thread,
 * release it, or destroy it), clear a durable run's detach mark, settle the
 * record of a run this host started, and clean up its journal once the end is
 * recorded; then the thread's next run may start. A host that lost the run
 * to a successor leaves all of it alone.
 */
import type { ChatMiddlewareContext } from '@tanstack/ai'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import type { PumpEnd } from '../durability/run-outcome.js'
import { clearDetach } from './durability.js'
import { cleanUpJournalOnceRecorded } from '../durability/journal-cleanup.js'
import { settleStartedRun } from './run-lease.js'
import { checkpointFinishedRun } from './run-snapshots.js'
import { destroyRun, endRun, takeDetachedUses, type RunState, type WithSandboxScope } from './run-state.js'

/**
 * A durable run another host took over while this one was paused or cut off
 * (its claim moved `driverEpoch`): stop watching and leave everything to the
 * successor: no destroy, no record write, no release (whose `keepAlive`
 * timer could destroy the sandbox under it), the file baseline kept. True
 * when that was the case. Source: issue 28 "a paused host that wakes up".
 */
export async function leaveLostRun(state: RunState): Promise<boolean> {
  if (!state.owner || (await state.owner.stillOwned())) return false
  endRun(state)
  await state.files?.stop({ flush: false, keepBaseline: true })
  state.logger?.sandbox(`withSandbox: run ${state.runId} is driven by another host now; its sandbox, journal and record are left to that host`)
  return true
}

/** Run a terminal hook's work, then let the thread's next run start, whatever happened. */
export async function thenRelease(runs: WeakMap<object, RunState>, ctx: ChatMiddlewareContext, work: (state: RunState) => Promise<void>): Promise<void> {
  const state = runs.get(ctx)
  if (!state) return
  try {
    await work(state)
  } finally {
    await state.snapshots?.release() // no checkpoint past the terminal hook: a finished run wrote its own in finishRun
    state.releaseTurn()
    state.lease?.release() // after the record is settled, so an attach waiting for it finds the run's end
  }
}

/** A run whose agent finished: keep the sandbox for the thread, or destroy it when the lifecycle says so. */
export async function finishRun(sandbox: SandboxDefinition, ctx: ChatMiddlewareContext, state: RunState): Promise<void> {
  endRun(state)
  await state.files?.stop({ flush: true })
  // Before the lifecycle may destroy the sandbox; a failure is reported by the terminal hook once the lifecycle ran.
  if (state.snapshots) state.snapshotError = (await checkpointFinishedRun(state.snapshots, sandbox, state.handle, state.runId, state.logger)).error
  if (sandbox.lifecycle.reuse === 'none' || state.destroyAfterRun) return destroyRun(sandbox, state, `run finished, ${state.destroyAfterRun ? 'no threadId' : "reuse 'none'"}`)
  releaseTakenOver(sandbox, state)
  const stillUsed = sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
  if (!sandbox.lifecycle.destroyOnComplete) return void state.logger?.sandbox(`keeping sandbox ${state.handle.id} for thread ${ctx.threadId}`)
  // A shared thread sandbox goes when the LAST run on it finishes, never under another run's feet.
  if (stillUsed === 0) return destroyRun(sandbox, state, 'run finished, destroyOnComplete')
  state.logger?.sandbox(`keeping sandbox ${state.handle.id}: ${stillUsed} other run(s) of thread ${ctx.threadId} still use it; the last one destroys it (destroyOnComplete)`)
}

/**
 * An attaching run took over a run detached in this process: the detached
 * run's use of the sandbox ends with it, before the attach's own release
 * (so `destroyOnComplete` sees the true count).
 */
export function releaseTakenOver(sandbox: SandboxDefinition, state: RunState): void {
  if (!state.durable?.run.attach) return
  for (let n = takeDetachedUses(sandbox, state.key); n > 0; n--) sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
}

/** The record of a durable run this host started, settled at its end (see `./run-lease.ts`); nothing for an attach or a non-durable run. */
export function settleStarted(state: RunState, end: PumpEnd, cancelled: boolean): Promise<void> {
  if (!state.durable || !state.lease) return Promise.resolve()
  return settleStartedRun(state.durable.run.runs, state.runId, end, cancelled, state.lease, state.logger)
}

/**
 * The journal of a durable run that ended here, in a sandbox that stays (a
 * destroyed one took it along): deleted in the background once the run's
 * end is recorded (`./journal-cleanup.ts`); until then a successor needs it.
 */
export function cleanUpJournal(state: RunState): void {
  if (!state.durable || !state.journalFiles || state.destroying) return
  cleanUpJournalOnceRecorded({ handle: state.handle, files: state.journalFiles, runs: state.durable.run.runs, log: state.durable.run.log, ...(state.logger ? { logger: state.logger } : {}) })
}

/** A durable run ended here (finished, failed or cancelled): it is no longer reclaimable. */
export async function settleDurable(noticed: WeakMap<object, Promise<void>>, ctx: ChatMiddlewareContext, state: RunState): Promise<void> {
  if (!state.durable) return
  await noticed.get(ctx) // a notification's write still in flight would land after the clear
  await clearDetach(state.durable.run.runs, state.runId, state.logger, state.owner)
}

/** The `onFinish` hook: the agent finished; apply the lifecycle, clear the detach mark, settle the record, clean up the journal. */
export function endFinishedRun(scope: WithSandboxScope, ctx: ChatMiddlewareContext): Promise<void> {
  const { sandbox, runs, noticed } = scope
  return thenRelease(runs, ctx, async (state) => {
    if (await leaveLostRun(state)) return
    await finishRun(sandbox, ctx, state)
    await settleDurable(noticed, ctx, state)
    await settleStarted(state, { kind: 'ended', lastTerminal: state.lastTerminal }, false)
    cleanUpJournal(state)
    if (state.snapshotError !== undefined) throw state.snapshotError
  })
}

/** The `onError` hook: stop watching, destroy (reuse 'none', no thread id) or release the sandbox, settle the record as failed. */
export function endFailedRun(scope: WithSandboxScope, ctx: ChatMiddlewareContext, info: { error: unknown }): Promise<void> {
  const { sandbox, runs, noticed } = scope
  return thenRelease(runs, ctx, async (state) => {
    if (await leaveLostRun(state)) return
    endRun(state)
    await state.files?.stop({ flush: true })
    if (sandbox.lifecycle.reuse === 'none' || state.destroyAfterRun) await destroyRun(sandbox, state, "run failed, reuse 'none'")
    else {
      releaseTakenOver(sandbox, state)
      sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
    }
    await settleDurable(noticed, ctx, state)
    await settleStarted(state, { kind: 'threw', error: info.error, lastTerminal: state.lastTerminal }, false)
    cleanUpJournal(state)
  })
}
