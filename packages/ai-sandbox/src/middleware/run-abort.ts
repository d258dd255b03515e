/**
 * Abort, detach and cancel. An abort of a durable, detachable run with no
 * cancel recorded in either band detaches (the sandbox and its agent stay,
 * the record gets `detachedSince` + `sandboxKey`); a cancel, or an abort of
 * any other live run, destroys the sandbox. The verdict is read once per run
 * (`cancelVerdict`), shared by the signal listener and the `onAbort` hook; a
 * cancel seen on the record while the run is live stops it too.
 */
import { provideRunDetached, RUN_CANCEL_REASON, type AbortInfo, type ChatMiddlewareContext, type RunStore } from '@tanstack/ai'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import { noteRunDetached } from '../durability/detach-notice.js'
import { isCancel, recordDetach } from './durability.js'
import { cleanUpJournal, finishRun, leaveLostRun, settleDurable, settleStarted, thenRelease } from './run-end.js'
import { destroyRun, endRun, holdDetachedUse, type RunState, type WithSandboxScope } from './run-state.js'

/**
 * The abort of a durable run with no cancel in either band: stop watching
 * (the run's file baseline stays for the takeover), keep the sandbox (its
 * agent runs on), write `detachedSince` + `sandboxKey`, and tell core's
 * delivery sink to leave the log open. The sandbox stays in
 * use (no release), so no `keepAlive` timer runs under the detached agent.
 */
export async function detachRun(sandbox: SandboxDefinition, ctx: ChatMiddlewareContext, state: RunState, runStore: RunStore): Promise<void> {
  await state.files?.stop({ flush: false, keepBaseline: true })
  if (!(await recordDetach(runStore, state.runId, state.key, state.logger, state.owner)) && !state.orphansFindable) {
    // No sweep could ever reach a detached run whose record lacks detachedSince unless the stores can find orphans (the
    // run store's listUndetachedRuns and the lock store's isHeld), issue 29: a lost run beats a sandbox billed for ever.
    state.logger?.errors(`withSandbox: run ${state.runId} could not be marked detached and its stores cannot find orphans (listUndetachedRuns and isHeld), so no sweep would ever reclaim it: destroying sandbox ${state.handle.id} instead`)
    return destroyRun(sandbox, state, 'the detach could not be recorded')
  }
  provideRunDetached(ctx, true)
  noteRunDetached(state.runId) // a run driver's pump (sandboxRunDriver, RunController) leaves the record and the log as they are
  holdDetachedUse(sandbox, state.key)
  state.logger?.sandbox(`run ${state.runId} detached: keeping sandbox ${state.handle.id} (${state.key}) for a takeover`)
}

/** A durable, detachable run's abort: a cancel in either band (decided once), or a detach. */
export function cancelVerdict(state: RunState, runStore: RunStore, inProcess: { cancelRequested?: boolean | undefined; reason?: unknown }): Promise<boolean> {
  state.verdict ??= isCancel(runStore, state.runId, inProcess)
  return state.verdict
}

/**
 * A cancel seen on the run record while the run is live: the verdict is a
 * cancel, the run is aborted with `RUN_CANCEL_REASON` (core's `onAbort` then
 * reports `cancelRequested`), the adapter's loop is woken so core sees the
 * abort now rather than at the agent's next event, and the sandbox is
 * destroyed, which stops the agent wherever it is.
 */
export function cancelFromRecord(sandbox: SandboxDefinition, ctx: ChatMiddlewareContext, state: RunState): void {
  if (state.ended || state.destroying) return
  state.logger?.sandbox(`run ${state.runId}: a cancel is recorded on its run record; stopping the run and destroying sandbox ${state.handle.id}`)
  state.verdict = Promise.resolve(true)
  ctx.abort(RUN_CANCEL_REASON)
  state.chunks.tick()
  void destroyRun(sandbox, state, 'run cancelled (requestRunCancel)').catch((error: unknown) => state.logger?.errors('sandbox destroy on a recorded cancel failed', { error }))
}

/**
 * The `onAbort` hook: a run whose agent had finished ends as finished; a live
 * durable, detachable run with no cancel in either band detaches; anything
 * else destroys the sandbox, and a cancel settles the record as aborted.
 */
export function endAbortedRun(scope: WithSandboxScope, ctx: ChatMiddlewareContext, info: AbortInfo): Promise<void> {
  const { sandbox, runs, noticed } = scope
  return thenRelease(runs, ctx, async (state) => {
    // The agent had already finished when the abort came: keep the lifecycle of a finished run.
    if (state.agentFinished) {
      if (await leaveLostRun(state)) return
      await finishRun(sandbox, ctx, state)
      await settleDurable(noticed, ctx, state)
      await settleStarted(state, { kind: 'ended', lastTerminal: state.lastTerminal }, false)
      return cleanUpJournal(state)
    }
    // A host that lost the run passes below too, without touching it: recordDetach, destroyRun and the settles check
    // the owner themselves (an extra record read here would delay the detach core's delivery sink waits for).
    endRun(state)
    const detachable = state.durable?.detachable ? state.durable.run.runs : undefined
    // Intent never comes from the abort itself: only a cancel in either band stops a durable run.
    if (detachable && !(info.cancelRequested === true || (await cancelVerdict(state, detachable, { reason: info.reason })))) return detachRun(sandbox, ctx, state, detachable)
    await destroyRun(sandbox, state, detachable ? 'run cancelled' : 'run aborted')
    await settleDurable(noticed, ctx, state)
    // Only a cancel settles the record: an abort of a non-detachable run is not a verdict on the run.
    if (detachable || (state.durable && (await cancelVerdict(state, state.durable.run.runs, { reason: info.reason })))) await settleStarted(state, { kind: 'aborted', lastTerminal: state.lastTerminal }, true)
  })
}
