/**
 * What a reaper sweep costs on local-process (issue 13): `probeRunExit`
 * against a live journal (the per-run price of every sweep), a sweep over
 * `runs` producing runs (probes only: nothing may be driven), a sweep that
 * expires `runs` stale runs (claim, the 5 s quiescence window, terminal
 * record, reclaim of each sandbox) and `pruneJournals` over `runs` journals
 * of terminal runs. Agents are real journaled `sh` processes started with
 * `startJournaledAgent`. Invariant: the producing sweep drives and touches
 * nothing; the expiring sweep expires and reclaims every run; the prune
 * deletes every journal; nothing is left running.
 */
import { randomUUID } from 'node:crypto'
import { InMemoryRunStore, memoryStream } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { InMemorySandboxInstanceStore, probeRunExit, pruneJournals, reapDetachedRuns, sandboxReclaimer, startJournaledAgent, type RunExitProbe, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { BenchError, median, percentile } from './stats.js'

/** One row of the table. */
export interface ReaperRow {
  readonly step: 'probeRunExit' | 'sweep, producing runs' | 'sweep, expired runs' | 'pruneJournals'
  readonly runs: number
  /** Wall time of the whole step, ms (for probeRunExit: the median of one probe). */
  readonly totalMs: number
  /** Per run, ms (for probeRunExit: the p95 of one probe). */
  readonly perRunMs: number
}

/**
 * Run the reaper benchmark.
 *
 * @param provider - A local-process provider.
 * @param journalDir - Absolute journal folder of the bench's own.
 * @param count - Runs per step.
 */
export async function benchReaper(provider: SandboxProvider, journalDir: string, count: number): Promise<ReaperRow[]> {
  const runs = new InMemoryRunStore()
  const instances = new InMemorySandboxInstanceStore()
  const handles: SandboxHandle[] = []
  const hasFinished = async (record: { runId: string; sandboxKey?: string }): Promise<RunExitProbe> => {
    const instance = record.sandboxKey ? await instances.get(record.sandboxKey) : null
    const handle = instance ? await provider.resume({ id: instance.providerSandboxId }) : null
    return handle ? probeRunExit({ handle, runId: record.runId, journalDir }) : { state: 'unknown' }
  }
  const rows: ReaperRow[] = []
  try {
    // `count` detached runs, each in its own sandbox, each agent waiting (producing) for up to 120 s.
    const seeded: { runId: string; handle: SandboxHandle }[] = []
    for (let i = 0; i < count; i++) {
      const handle = await provider.create({ key: `bench-reaper-${i}` })
      handles.push(handle)
      const runId = `bench-reaper-${randomUUID()}`
      const sandboxKey = `bench-reaper:${handle.id}`
      await instances.upsert({ key: sandboxKey, provider: provider.name, providerSandboxId: handle.id, threadId: `t-${i}`, latestRunId: runId, updatedAt: Date.now() })
      await startJournaledAgent(handle, `printf '{"type":"text"}\\n'; sleep 120`, { journal: { runId, dir: journalDir }, agentEnv: { TANSTACK_HARNESS_RUN: `bench-reaper-${runId}` } })
      await runs.createOrResume({ runId, threadId: `t-${i}`, startedAt: Date.now() })
      await runs.update(runId, { detachedSince: Date.now(), sandboxKey })
      seeded.push({ runId, handle })
    }

    const probes: number[] = []
    for (let i = 0; i < 5; i++) {
      for (const run of seeded) {
        const start = performance.now()
        const probe = await probeRunExit({ handle: run.handle, runId: run.runId, journalDir })
        probes.push(performance.now() - start)
        if (probe.state !== 'producing') throw new BenchError(`probeRunExit said ${probe.state} for a live agent`)
      }
    }
    rows.push({ step: 'probeRunExit', runs: probes.length, totalMs: median(probes), perRunMs: percentile(probes, 95) })

    const options = {
      runs,
      locks: new InMemoryLockStore(),
      durability: (runId: string) => memoryStream({ runId }),
      hasFinished,
      drive: () => {
        throw new BenchError('a sweep drove a run it could not prove finished')
      },
      detachedRunTtlMs: 60 * 60 * 1000,
      maxRuns: count,
      reclaim: sandboxReclaimer({ provider, instances, journalDir }),
    }
    let start = performance.now()
    const producing = await reapDetachedRuns({ ...options, now: Date.now() })
    const producingMs = performance.now() - start
    if (producing.outcomes.producing !== count) throw new BenchError(`the producing sweep: ${JSON.stringify(producing.outcomes)}`)
    rows.push({ step: 'sweep, producing runs', runs: count, totalMs: producingMs, perRunMs: producingMs / count })

    start = performance.now()
    const expired = await reapDetachedRuns({ ...options, now: Date.now() + 2 * options.detachedRunTtlMs })
    const expiredMs = performance.now() - start
    if (expired.outcomes.expired !== count || expired.entries.some((e) => (e.reclaim as { reclaimed?: boolean } | undefined)?.reclaimed !== true)) throw new BenchError(`the expiring sweep: ${JSON.stringify(expired.outcomes)}`)
    rows.push({ step: 'sweep, expired runs', runs: count, totalMs: expiredMs, perRunMs: expiredMs / count })

    // Journals of terminal runs, as a detached run that finished leaves them.
    const lister = await provider.create({ key: 'bench-reaper-prune' })
    handles.push(lister)
    for (let i = 0; i < count; i++) {
      const runId = `bench-prune-${randomUUID()}`
      await startJournaledAgent(lister, 'true', { journal: { runId, dir: journalDir } })
      await runs.createOrResume({ runId, threadId: 'prune', startedAt: Date.now() })
      await runs.update(runId, { status: 'completed', finishedAt: Date.now() })
    }
    start = performance.now()
    const pruned = await pruneJournals({ handle: lister, runs, journalDir, orphanTtlMs: 0, maxDeletes: count })
    const pruneMs = performance.now() - start
    if (pruned.deleted.length !== count || pruned.failures.length > 0) throw new BenchError(`pruneJournals deleted ${pruned.deleted.length} of ${count}`)
    rows.push({ step: 'pruneJournals', runs: count, totalMs: pruneMs, perRunMs: pruneMs / count })
    return rows
  } finally {
    for (const handle of handles) await provider.destroy({ id: handle.id }).catch(() => undefined)
  }
}
