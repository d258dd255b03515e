/**
 * The sweep: `reapDetachedRuns` on an interval, closing out runs whose tab
 * never came back (finalized from the journal, or expired after the TTL),
 * with `probeRunExit` as the out-of-band `hasFinished` and
 * `sandboxReclaimer` removing the sandbox. Keeps the last result, and the
 * last one that closed a run out, for the status page. Invariant: one sweep at a time in this process; never drives
 * a run to learn whether it finished. Each sweep also removes the sandbox a
 * failed run kept, once `keepFailedMs` has passed (a restarted server has no
 * `keepAlive` timer for it), and the per-run Claude Code folders of runs that
 * are no longer live (`agent.dropRunFolders`).
 */
import type { RunRecord } from '@tanstack/ai'
import { probeRunExit, reapDetachedRuns, sandboxReclaimer, type ReapResult, type RunExitProbe } from '@tanstack/ai-sandbox'
import type { SqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { controllerFor, type Agent } from './agent.js'
import type { ServerConfig } from './config.js'
import type { PromptStore } from './prompts.js'

/** What the status page shows about the reaper. */
export interface ReaperStatus {
  readonly everyMs: number
  readonly detachedTtlMs: number
  readonly sweeps: number
  /** The last sweep: when it started and ended (epoch ms), its outcome counts and each run's outcome. */
  readonly last: SweepSummary | null
  /** The last sweep that closed a run out (finalized or expired one), kept while later sweeps find nothing to do. */
  readonly lastCloseOut: SweepSummary | null
  readonly lastError: string | null
}

/** One sweep: when it started and ended (epoch ms), its outcome counts and each run's outcome. */
export interface SweepSummary {
  readonly startedAt: number
  readonly finishedAt: number
  readonly outcomes: ReapResult['outcomes']
  readonly runs: { runId: string; outcome: string }[]
}

/** A scheduled reaper: `status()` for the status page, `sweep()` to run one now, `stop()` on shutdown. */
export interface Reaper {
  status: () => ReaperStatus
  sweep: () => Promise<void>
  stop: () => void
}

/** Start sweeping every `config.reapEveryMs`. */
export function scheduleReaper(config: ServerConfig, stores: SqliteStores, agent: Agent, prompts: PromptStore): Reaper {
  const { provider } = agent.sandbox
  const reclaim = sandboxReclaimer({ provider, instances: stores.instances })
  let sweeps = 0
  let last: ReaperStatus['last'] = null
  let lastCloseOut: ReaperStatus['lastCloseOut'] = null
  let lastError: string | null = null
  let sweeping: Promise<void> | undefined

  /** Out of band: read the exit sentinel from the run's journal in its sandbox. Anything unclear is `unknown`. */
  async function hasFinished(record: RunRecord): Promise<RunExitProbe> {
    if (record.sandboxKey === undefined) return { state: 'unknown' }
    try {
      const instance = await stores.instances.get(record.sandboxKey)
      if (instance === null) return { state: 'unknown' }
      // resume, never ensure: ensure would create a fresh sandbox for a run whose sandbox is gone.
      const handle = await provider.resume({ id: instance.providerSandboxId })
      if (handle === null) return { state: 'unknown' }
      return await probeRunExit({ handle, runId: record.runId })
    } catch (error) {
      return { state: 'unknown', error }
    }
  }

  async function sweepOnce(): Promise<void> {
    const startedAt = Date.now()
    try {
      const result = await reapDetachedRuns({
        runs: stores.runs,
        locks: stores.locks,
        durability: (runId) => stores.stream({ runId }),
        hasFinished,
        drive: ({ runId, threadId, signal }) => {
          const stream = async function* () {
            const stored = await prompts.load(runId)
            yield* agent.run({ runId, threadId, prompt: stored?.prompt ?? '', log: stores.stream({ runId }), attach: true, abortController: controllerFor(signal) })
          }
          return stream()
        },
        now: startedAt,
        detachedRunTtlMs: config.detachedTtlMs,
        fenceQuietMs: config.fenceQuietMs,
        reclaim,
      })
      last = { startedAt, finishedAt: Date.now(), outcomes: result.outcomes, runs: result.entries.map((entry) => ({ runId: entry.runId, outcome: entry.outcome })) }
      if (result.outcomes.finalized + result.outcomes.expired > 0) lastCloseOut = last
      lastError = null
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error) // it resolves by contract; a bad option lands here
    } finally {
      sweeps++
    }
  }

  /**
   * A failed run keeps its sandbox for `keepFailedMs` through `keepAlive`, a timer of the process that ran it. When
   * that process is gone (a restart), nobody would remove it: so each sweep destroys the sandbox of a thread whose
   * latest run failed longer than `keepFailedMs` ago. Idempotent: a key whose sandbox is gone already is a no-op.
   */
  async function dropFailedSandboxes(now: number): Promise<void> {
    const latest = new Map<string, string>() // thread -> its newest run
    for (const entry of await prompts.recent(200)) if (!latest.has(entry.threadId)) latest.set(entry.threadId, entry.runId)
    for (const [threadId, runId] of latest) {
      const record = await stores.runs.get(runId)
      if (record?.status !== 'failed' || (record.finishedAt ?? now) + config.keepFailedMs > now) continue
      if (await stores.runs.findActiveRun(threadId)) continue // a run started since: it uses the sandbox
      await agent.sandbox.destroy({ key: agent.sandbox.key({ threadId, runId }), instances: stores.instances }).catch(() => undefined) // the next sweep retries
    }
  }

  const sweep = () => (sweeping ??= Promise.all([sweepOnce(), dropFailedSandboxes(Date.now()).catch(() => undefined), agent.dropRunFolders().catch(() => undefined)]).then(() => undefined).finally(() => (sweeping = undefined)))
  const timer = setInterval(() => void sweep(), config.reapEveryMs)
  timer.unref()
  void sweep() // once at start: runs a previous server process left detached
  return {
    status: () => ({ everyMs: config.reapEveryMs, detachedTtlMs: config.detachedTtlMs, sweeps, last, lastCloseOut, lastError }),
    sweep,
    stop: () => clearInterval(timer),
  }
}
