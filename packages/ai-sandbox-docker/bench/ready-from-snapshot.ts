/**
 * (e) Time to a ready sandbox for a workspace whose setup takes 5 s: a fresh
 * create + bootstrap versus a restore of the after-setup snapshot, through
 * core's `ensure` exactly as a chat run would. The ratio is the figure.
 */
import { performance } from 'node:perf_hooks'
import { defineSandbox, defineWorkspace, InMemorySandboxInstanceStore, type SandboxProvider } from '@tanstack/ai-sandbox'
import { round, summary } from './stats.js'

/** Setup seconds of the measured workspace (at least 5, per the benchmark's definition). */
const SETUP_SECONDS = 5

/** Measure `runs` fresh and restored ensures on `provider`; every sandbox is destroyed. */
export async function readyFromSnapshot(provider: SandboxProvider, runs: number): Promise<{ what: string; medianMs: number; p95Ms: number; runs: number }[] & { ratio?: number }> {
  const fresh: number[] = []
  const restored: number[] = []
  for (let run = 0; run < runs; run++) {
    const instances = new InMemorySandboxInstanceStore()
    // A workspace of its own per run, so every fresh ensure really bootstraps.
    const sandbox = defineSandbox({
      id: `bench-ready-${run}-${Date.now()}`,
      provider,
      workspace: defineWorkspace({ setup: [`sleep ${SETUP_SECONDS}`, 'echo built > built.txt'] }),
    })
    let start = performance.now()
    const first = await sandbox.ensure({ threadId: 'a', runId: 'r1', instances })
    fresh.push(performance.now() - start)
    await provider.destroy({ id: first.id })
    start = performance.now()
    const again = await sandbox.ensure({ threadId: 'a', runId: 'r2', instances })
    restored.push(performance.now() - start)
    if ((await again.fs.read('built.txt')).trim() !== 'built') throw new Error('the restored sandbox lacks the setup output')
    await sandbox.destroy({ key: sandbox.key({ threadId: 'a', runId: '' }), instances })
  }
  const rows = [
    { what: `fresh: create + bootstrap (setup ${SETUP_SECONDS} s) + snapshot`, ...summary(fresh) },
    { what: 'restored from the after-setup snapshot', ...summary(restored) },
  ] as { what: string; medianMs: number; p95Ms: number; runs: number }[] & { ratio?: number }
  rows.ratio = round(summary(fresh).medianMs / summary(restored).medianMs, 1)
  return rows
}
