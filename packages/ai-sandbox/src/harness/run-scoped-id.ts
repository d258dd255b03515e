/**
 * Run-scoped ids: a per-run counter (`<runId>-0`, `<runId>-1`, ...) with no
 * clock and no randomness, used as harness translators' `genId` so that
 * translating the same CLI output twice yields the same message ids.
 */

/**
 * Create an id generator scoped to one run.
 * @param runId - The run's id; every id starts with it.
 * @returns A function returning `<runId>-<n>` for n = 0, 1, 2, ...
 * @example
 * ```ts
 * const genId = createRunScopedIdGen('run-7') // genId() === 'run-7-0'
 * ```
 */
export function createRunScopedIdGen(runId: string): () => string {
  let next = 0
  return () => `${runId}-${next++}`
}
