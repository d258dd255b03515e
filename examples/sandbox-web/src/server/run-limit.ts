/**
 * The caps on live runs: at most `perClient` at once for one credential and
 * at most `total` for the whole server. A run counts from the moment the
 * start route accepts it until its record leaves `running` (completed,
 * failed, aborted), wherever it is driven meanwhile: a detached run's agent
 * still works in its sandbox, so it still counts. Owns an in-memory map of
 * the runs it counts; the records are the truth about which have ended.
 * Invariant: the check and the reservation happen in one synchronous step,
 * so two starts at the same moment cannot both take the last slot.
 */

/** The two caps. */
export interface RunLimits {
  /** Live runs one client may have (`SANDBOX_WEB_MAX_RUNS`). */
  readonly perClient: number
  /** Live runs the server has, all clients together (`SANDBOX_WEB_MAX_RUNS_TOTAL`). */
  readonly total: number
}

/** The answer to a start: a slot to give back if the run is refused after all, or why there is none. */
export type RunSlot = { granted: true; release: () => void } | { granted: false; message: string }

/** See the module comment. */
export interface RunLimiter {
  /** Reserve a slot for `runId` of `client`, after forgetting the runs that have ended. */
  acquire: (client: string, runId: string) => Promise<RunSlot>
  /** Count `runId` for `client` without a check: a run a previous server process left running. */
  track: (client: string, runId: string) => void
}

/**
 * Make the caps.
 * @param isLive - Whether a run still counts: its record is `running`, or not yet written (a start in progress).
 * @example
 * ```ts
 * const limiter = runLimiter({ perClient: 2, total: 4 }, async (runId) => [undefined, 'running'].includes((await runs.get(runId))?.status))
 * const slot = await limiter.acquire('token-ab12', 'run-1')
 * if (!slot.granted) return c.json({ error: slot.message }, 429)
 * ```
 */
export function runLimiter(limits: RunLimits, isLive: (runId: string) => Promise<boolean>): RunLimiter {
  const live = new Map<string, string>() // runId -> client

  async function forgetEnded(): Promise<void> {
    const entries = [...live]
    const ended = await Promise.all(entries.map(async ([runId]) => !(await isLive(runId).catch(() => true))))
    entries.forEach(([runId, client], index) => {
      if (ended[index] && live.get(runId) === client) live.delete(runId)
    })
  }

  return {
    async acquire(client, runId) {
      await forgetEnded()
      // From here to the reservation: no await.
      const mine = [...live.values()].filter((owner) => owner === client).length
      if (mine >= limits.perClient) {
        return { granted: false, message: `you have ${mine} runs going, the most one client may have at once (SANDBOX_WEB_MAX_RUNS=${limits.perClient}): wait for one to finish or stop it, then start again` }
      }
      if (live.size >= limits.total) {
        return { granted: false, message: `the server is running ${live.size} runs, its limit (SANDBOX_WEB_MAX_RUNS_TOTAL=${limits.total}): wait for one to finish, then start again` }
      }
      live.set(runId, client)
      return { granted: true, release: () => void live.delete(runId) }
    },
    track(client, runId) {
      live.set(runId, client)
    },
  }
}
