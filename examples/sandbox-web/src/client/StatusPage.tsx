/**
 * The status page: the reaper's schedule, its last sweep (outcome counts and
 * each run's outcome) and the last sweep that closed a run out, the live sandboxes (local-process: the folders under
 * the sandbox root; Docker: the app's containers) and recent runs with their record status. Polls
 * `GET /api/status` every two seconds.
 */
import { useEffect, useState } from 'react'
import { apiFetch, UNAUTHORIZED_MESSAGE, useUnauthorized } from './auth.js'

interface Sweep {
  startedAt: number
  finishedAt: number
  outcomes: Record<string, number>
  runs: { runId: string; outcome: string }[]
}

interface Status {
  provider: string
  mode: string
  reaper: {
    everyMs: number
    detachedTtlMs: number
    sweeps: number
    last: Sweep | null
    lastCloseOut: Sweep | null
    lastError: string | null
  }
  sandboxes: string[] | null
  drivingHere: string[]
  runs: { runId: string; threadId: string; status: string; startedAt: number; detached: boolean; prompt: string | null }[]
}

export function StatusPage() {
  const unauthorized = useUnauthorized()
  const [status, setStatus] = useState<Status | undefined>()
  const [sweeping, setSweeping] = useState(false)
  useEffect(() => {
    let stopped = false
    const poll = async () => {
      const response = await apiFetch('/api/status').catch(() => undefined)
      if (response?.ok && !stopped) setStatus((await response.json()) as Status)
    }
    void poll()
    const timer = setInterval(() => void poll(), 2000)
    return () => {
      stopped = true
      clearInterval(timer)
    }
  }, [])
  const sweepNow = async () => {
    setSweeping(true)
    // A JSON body, as the server requires of every request that changes something.
    await apiFetch('/api/status/sweep', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }).finally(() => setSweeping(false))
    const response = await apiFetch('/api/status')
    if (response.ok) setStatus((await response.json()) as Status)
  }
  if (unauthorized && !status) return <main><p className="error" data-testid="unauthorized">{UNAUTHORIZED_MESSAGE}</p></main>
  if (!status) return <main>Loading…</main>
  const { reaper } = status
  return (
    <main className="status">
      <header>
        <h1>Status</h1>
        <span className="meta">{status.mode}, {status.provider} sandboxes</span>
        <a href="/">Back to the run</a>
      </header>
      <section data-testid="reaper">
        <h2>Reaper</h2>
        <p>
          Sweeps every {reaper.everyMs / 1000} s; a detached run nobody rejoins expires after {Math.round(reaper.detachedTtlMs / 60_000)} min. Sweeps so far: <span data-testid="reaper-sweeps">{reaper.sweeps}</span>.{' '}
          <button type="button" disabled={sweeping} onClick={() => void sweepNow()}>Sweep now</button>
        </p>
        {reaper.lastError && <p className="error">Last sweep failed: {reaper.lastError}</p>}
        {reaper.last ? (
          <div data-testid="reaper-last">
            <p>
              Last sweep at {new Date(reaper.last.startedAt).toLocaleTimeString()}, took {reaper.last.finishedAt - reaper.last.startedAt} ms, looked at {reaper.last.runs.length} detached run(s).
            </p>
            <table>
              <tbody>
                {Object.entries(reaper.last.outcomes).map(([outcome, count]) => (
                  <tr key={outcome} data-outcome={outcome}>
                    <td>{outcome}</td>
                    <td>{count}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : (
          <p>No sweep has finished yet.</p>
        )}
        {reaper.lastCloseOut && (
          <p data-testid="reaper-close-out">
            Last close-out at {new Date(reaper.lastCloseOut.startedAt).toLocaleTimeString()}:{' '}
            {reaper.lastCloseOut.runs
              .filter((run) => run.outcome === 'finalized' || run.outcome === 'expired')
              .map((run) => (
                <span key={run.runId} data-run-id={run.runId} data-outcome={run.outcome}>
                  {run.runId} {run.outcome}{' '}
                </span>
              ))}
          </p>
        )}
      </section>
      <section>
        <h2>Sandboxes</h2>
        {status.sandboxes === null ? <p className="error">The Docker engine did not answer.</p> : (
          <p data-testid="sandboxes" data-count={status.sandboxes.length}>
            {status.sandboxes.length === 0 ? 'none alive' : status.sandboxes.join(', ')}
          </p>
        )}
      </section>
      <section>
        <h2>Recent runs</h2>
        <table data-testid="runs">
          <thead>
            <tr><th>run</th><th>thread</th><th>status</th><th>started</th></tr>
          </thead>
          <tbody>
            {status.runs.map((run) => (
              <tr key={run.runId} data-run-id={run.runId} data-status={run.status}>
                <td>{run.runId}</td>
                <td><a href={`/?thread=${encodeURIComponent(run.threadId)}`}>{run.threadId}</a></td>
                <td>{run.status}{run.detached ? ' (detached)' : ''}{status.drivingHere.includes(run.runId) ? ' (driven here)' : ''}</td>
                <td>{new Date(run.startedAt).toLocaleTimeString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </main>
  )
}
