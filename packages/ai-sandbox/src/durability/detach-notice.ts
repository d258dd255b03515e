/**
 * In-process word from `withSandbox` to the run driver's pump that its run
 * detached ({@link noteRunDetached}, {@link listenForRunDetach}). Only runs
 * with a listening pump are remembered, so nothing accumulates. Internal.
 * Design notes: docs/design/durability.md
 */

/** The pumps listening, per run id: each one's flag. */
const listening = new Map<string, Set<{ detached: boolean }>>()

/**
 * Listen for the detach of `runId` in this process until `dispose`.
 *
 * @returns `detached()`: whether `withSandbox` detached the run since; `dispose()`: stop listening.
 */
export function listenForRunDetach(runId: string): { detached: () => boolean; dispose: () => void } {
  const flag = { detached: false }
  const set = listening.get(runId) ?? new Set()
  set.add(flag)
  listening.set(runId, set)
  return {
    detached: () => flag.detached,
    dispose: () => {
      set.delete(flag)
      if (set.size === 0 && listening.get(runId) === set) listening.delete(runId)
    },
  }
}

/** `withSandbox` detached `runId` (an abort with no cancel): tell the pumps listening for it. */
export function noteRunDetached(runId: string): void {
  for (const flag of listening.get(runId) ?? []) flag.detached = true
}
