/**
 * Benchmark (f): file-event latency, from calling `handle.fs.write` to the
 * create event that reports it, through `watchWorkspace`; the write's own
 * duration is a column of its own. Local-process uses the native `fs.watch`;
 * Docker has no native watcher and polls (find + stat through exec) at the
 * default interval and at 100 ms. Each write starts after a random pause of up
 * to one interval, so writes do not line up with the poll. Owns every sandbox
 * it creates and destroys it; a Docker engine that is not answering is a
 * skipped row.
 */
import { DEFAULT_WATCH_INTERVAL_MS, watchWorkspace, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox } from '@tanstack/ai-sandbox-docker'
import { BenchError, median, percentile } from './stats.js'

/** One row of the file-event latency result. */
export interface FileEventLatencyRow {
  readonly name: string
  readonly mode: 'native' | 'poll' | 'skipped'
  readonly iterations: number
  /** Milliseconds from calling `fs.write` to the event. */
  readonly medianMs: number
  /** Milliseconds. */
  readonly p95Ms: number
  /** Median duration of the `fs.write` itself, in ms (part of the latency). */
  readonly writeMedianMs: number
  /** Why the row did not run. */
  readonly skipped?: string
}

/** Longest wait for one event before the run counts as broken, in ms. */
const EVENT_TIMEOUT_MS = 10_000

/**
 * Measure file-event latency on local-process and, when the engine answers, on Docker.
 *
 * @param localProvider - A local-process provider.
 * @param options.iterations - Writes per local-process row. Default 50.
 * @param options.dockerIterations - Writes per Docker row. Default 20.
 * @param options.dockerImage - Image for the Docker rows. Default `tanstack-sandbox-busybox:latest`.
 * @throws BenchError `bench-failed` when a written file is never reported.
 */
export async function benchFileEventLatency(
  localProvider: SandboxProvider,
  options: { iterations?: number; dockerIterations?: number; dockerImage?: string } = {},
): Promise<FileEventLatencyRow[]> {
  const { iterations = 50, dockerIterations = 20, dockerImage = 'tanstack-sandbox-busybox:latest' } = options
  const rows = [await measure('local-process (fs.watch)', localProvider, iterations)]
  const docker = dockerSandbox({ image: dockerImage, labels: { 'tanstack-bench': 'file-events' }, killGraceMs: 500 })
  for (const intervalMs of [DEFAULT_WATCH_INTERVAL_MS, 100]) {
    try {
      rows.push(await measure(`docker ${dockerImage} (poll ${intervalMs} ms)`, docker, dockerIterations, intervalMs))
    } catch (error) {
      if (error instanceof BenchError) throw error
      rows.push({ name: `docker ${dockerImage} (poll ${intervalMs} ms)`, mode: 'skipped', iterations: 0, medianMs: NaN, p95Ms: NaN, writeMedianMs: NaN, skipped: (error as Error).message.split('\n')[0] })
    }
  }
  return rows
}

async function measure(name: string, provider: SandboxProvider, iterations: number, intervalMs?: number): Promise<FileEventLatencyRow> {
  const handle = await provider.create()
  try {
    const arrivals = new Map<string, number>()
    const waiters = new Map<string, () => void>()
    const watcher = await watchWorkspace(handle, {
      onEvent: (event) => {
        if (event.type !== 'create' || arrivals.has(event.path)) return
        arrivals.set(event.path, performance.now())
        waiters.get(event.path)?.()
      },
      ...(intervalMs ? { intervalMs } : {}),
    })
    try {
      await writeAndWait(handle, 'warm-up.txt', arrivals, waiters)
      const samples: number[] = []
      const writes: number[] = []
      for (let i = 0; i < iterations; i++) {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * (intervalMs ?? 20)))
        const { started, written, arrived } = await writeAndWait(handle, `f${i}.txt`, arrivals, waiters)
        samples.push(arrived - started)
        writes.push(written - started)
      }
      return { name, mode: watcher.mode, iterations: samples.length, medianMs: median(samples), p95Ms: percentile(samples, 95), writeMedianMs: median(writes) }
    } finally {
      await watcher.stop()
    }
  } finally {
    await handle.destroy()
  }
}

/** Write `file`, then wait until its create event arrived (or fail after EVENT_TIMEOUT_MS). */
async function writeAndWait(handle: SandboxHandle, file: string, arrivals: Map<string, number>, waiters: Map<string, () => void>): Promise<{ started: number; written: number; arrived: number }> {
  const path = `${handle.workspaceRoot.replace(/\/+$/, '')}/${file}`
  const arrived = new Promise<void>((resolve) => waiters.set(path, resolve))
  const started = performance.now()
  await handle.fs.write(file, 'x')
  const written = performance.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new BenchError(`no create event for ${path} within ${EVENT_TIMEOUT_MS} ms`)), EVENT_TIMEOUT_MS)))
  try {
    await Promise.race([arrivals.has(path) ? Promise.resolve() : arrived, timeout])
  } finally {
    clearTimeout(timer)
    waiters.delete(path)
  }
  return { started, written, arrived: arrivals.get(path)! }
}
