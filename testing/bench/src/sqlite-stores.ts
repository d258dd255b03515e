/**
 * The SQLite stores of `@tanstack/ai-sandbox-sqlite` beside core's in-memory
 * ones (issue 17's embedded default): lock acquire+release latency, append
 * throughput in chunks/s (one chunk per append, and core's default batch of
 * 32), and tail latency from calling `append` to a tailing `read` yielding
 * the chunk, on the same connection (woken at once) and on a second
 * connection to the file (what another process sees: it polls every
 * `pollMs`). Invariant: every measured log holds exactly the chunks appended,
 * and every tailer receives every chunk in order.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { EventType, memoryStream, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { BenchError, median, percentile } from './stats.js'

/** One row of the lock table. */
export interface LockLatencyRow {
  readonly store: string
  readonly iterations: number
  /** Median ms of one uncontended `withLock(key, noop)`: acquire, run, release. */
  readonly medianMs: number
  readonly p95Ms: number
}

/** One row of the append table. */
export interface AppendThroughputRow {
  readonly store: string
  /** Chunks per `append` call. */
  readonly batch: number
  readonly chunks: number
  readonly chunksPerSecond: number
}

/** One row of the tail table. */
export interface TailLatencyRow {
  readonly store: string
  readonly reader: string
  readonly pollMs: number | null
  readonly samples: number
  /** Median ms from calling `append` to the tailer receiving the chunk. */
  readonly medianMs: number
  readonly p95Ms: number
}

/** What {@link benchSqliteStores} returns. */
export interface SqliteStoresBench {
  readonly locks: LockLatencyRow[]
  readonly appends: AppendThroughputRow[]
  readonly tails: TailLatencyRow[]
}

const chunk = (i: number): StreamChunk => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: `token ${i} `, timestamp: Date.now() }) as StreamChunk

/** Median and p95 ms of one uncontended `withLock(key, noop)`, after 20 warm-up calls. */
export async function lockLatency(store: string, locks: LockStore, iterations: number): Promise<LockLatencyRow> {
  const samples: number[] = []
  for (let i = 0; i < iterations + 20; i++) {
    const start = performance.now()
    await locks.withLock('bench-key', async () => undefined)
    if (i >= 20) samples.push(performance.now() - start) // the first 20 warm up
  }
  return { store, iterations, medianMs: median(samples), p95Ms: percentile(samples, 95) }
}

/** Chunks/s of appending `chunks` chunks `batch` at a time; checks the log holds them all. */
export async function appendThroughput(store: string, log: StreamDurability, batch: number, chunks: number): Promise<AppendThroughputRow> {
  const start = performance.now()
  for (let i = 0; i < chunks; i += batch) await log.append(Array.from({ length: Math.min(batch, chunks - i) }, (_, j) => chunk(i + j)))
  const seconds = (performance.now() - start) / 1000
  const stored = (await log.snapshot()).length
  if (stored !== chunks) throw new BenchError(`${store}: the log holds ${stored} chunks after appending ${chunks}.`)
  return { store, batch, chunks, chunksPerSecond: chunks / seconds }
}

/**
 * Append `samples` chunks one at a time, `gapMs` apart, and time each from the
 * `append` call to `reader` yielding it. Chunks are matched by their text, not
 * their offset: a tailer woken by the commit may yield a chunk before the
 * writer's `append` has resolved.
 */
export async function tailLatency(store: string, reader: string, pollMs: number | null, writer: StreamDurability, tail: StreamDurability, samples: number, gapMs: number): Promise<TailLatencyRow> {
  const appendedAt = new Map<string, number>()
  const latencies: number[] = []
  await writer.append([chunk(-1)]) // so the tailer's from-start join has its first chunk
  const received = (async () => {
    let n = 0
    for await (const { chunk: got } of tail.read('-1')) {
      const at = appendedAt.get((got as { delta?: string }).delta ?? '')
      if (at !== undefined) latencies.push(performance.now() - at)
      n++
    }
    return n
  })()
  for (let i = 0; i < samples; i++) {
    await new Promise((resolve) => setTimeout(resolve, gapMs))
    const next = chunk(i)
    appendedAt.set((next as { delta: string }).delta, performance.now())
    await writer.append([next])
  }
  await writer.close()
  const count = await received
  if (count !== samples + 1 || latencies.length !== samples) throw new BenchError(`${store} (${reader}): the tailer received ${count} of ${samples + 1} chunks (${latencies.length} of the ${samples} timed ones).`)
  return { store, reader, pollMs, samples, medianMs: median(latencies), p95Ms: percentile(latencies, 95) }
}

/**
 * Measure the SQLite stores beside the in-memory ones, on a database file in
 * a temp folder removed afterwards.
 * @param options.lockIterations - Timed `withLock` calls per store.
 * @param options.appendChunks - Chunks appended per throughput row.
 * @param options.tailSamples - Chunks timed per tail row.
 */
export async function benchSqliteStores(options: { lockIterations: number; appendChunks: number; tailSamples: number }): Promise<SqliteStoresBench> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-sqlite-'))
  const path = join(dir, 'bench.db')
  const stores = createSqliteStores({ path })
  const other = createSqliteStores({ path, pollMs: 25 })
  const otherFast = createSqliteStores({ path, pollMs: 5 })
  try {
    const locks = [await lockLatency('InMemoryLockStore', new InMemoryLockStore(), options.lockIterations), await lockLatency('sqlite (WAL file)', stores.locks, options.lockIterations)]

    const appends: AppendThroughputRow[] = []
    for (const batch of [1, 32]) {
      appends.push(await appendThroughput('memoryStream', memoryStream({ runId: `bench-${randomUUID()}` }), batch, options.appendChunks))
      appends.push(await appendThroughput('sqlite (WAL file)', stores.stream({ runId: `bench-${randomUUID()}` }), batch, options.appendChunks))
    }

    const run = (): { runId: string } => ({ runId: `bench-${randomUUID()}` })
    const tails: TailLatencyRow[] = []
    const memoryRun = run()
    tails.push(await tailLatency('memoryStream', 'same process', null, memoryStream(memoryRun), memoryStream(memoryRun), options.tailSamples, 3))
    const same = run()
    tails.push(await tailLatency('sqlite (WAL file)', 'same connection', null, stores.stream(same), stores.stream(same), options.tailSamples, 3))
    const second = run()
    tails.push(await tailLatency('sqlite (WAL file)', 'second connection (as another process)', 25, stores.stream(second), other.stream(second), options.tailSamples, 3))
    const secondFast = run()
    tails.push(await tailLatency('sqlite (WAL file)', 'second connection (as another process)', 5, stores.stream(secondFast), otherFast.stream(secondFast), options.tailSamples, 3))
    return { locks, appends, tails }
  } finally {
    stores.close()
    other.close()
    otherFast.close()
    await rm(dir, { recursive: true, force: true })
  }
}
