/**
 * Benchmark (a): the round trip of `handle.process.exec('true')` on a
 * local-process sandbox beside Node's own `child_process.spawn('/bin/sh',
 * ['-c', 'true'])` awaiting exit, so the provider's overhead over a bare
 * spawn is visible. Owns the sandbox it creates and destroys it.
 */
import { spawn } from 'node:child_process'
import type { SandboxProvider } from '@tanstack/ai-sandbox'
import { Bench } from 'tinybench'
import { BenchError, median, percentile } from './stats.js'

/** One row of the exec round-trip result. */
export interface ExecRoundTripRow {
  readonly name: string
  readonly iterations: number
  /** Milliseconds. */
  readonly medianMs: number
  /** Milliseconds. */
  readonly p95Ms: number
}

/**
 * Time `iterations` round trips of each variant (after 10 warm-up runs).
 *
 * @param provider - A local-process provider; one sandbox is created and destroyed.
 * @param iterations - Samples per variant. Default 200.
 * @throws BenchError `bench-failed` when a command exits non-zero.
 */
export async function benchExecRoundTrip(provider: SandboxProvider, iterations = 200): Promise<ExecRoundTripRow[]> {
  const handle = await provider.create()
  try {
    const bench = new Bench({ iterations, time: 0, warmupIterations: 10, warmupTime: 0, throws: true })
    bench.add('local-process exec(`true`)', async () => {
      const result = await handle.process.exec('true')
      if (result.exitCode !== 0) throw new BenchError(`exec('true') exited ${result.exitCode}: ${result.stderr}`)
    })
    bench.add("node spawn('/bin/sh', ['-c', 'true']) await exit", () => spawnTrue())
    await bench.run()
    return bench.tasks.map((task) => {
      const samples = task.result?.latency.samples ?? []
      return { name: task.name, iterations: samples.length, medianMs: median(samples), p95Ms: percentile(samples, 95) }
    })
  } finally {
    await handle.destroy()
  }
}

function spawnTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', 'true'])
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new BenchError(`sh -c true exited ${code}`))))
  })
}
