/**
 * What the run driver costs a run (issue 12): `pipeToRunLog` pumping a
 * stream into core's `memoryStream` and `InMemoryRunStore` (with and without
 * an abort signal, which costs a race per chunk), beside a plain
 * pass over the same stream (the floor) and a naive pump that awaits one
 * `append` per chunk. Measured on the in-memory log and on a log whose every
 * `append` takes `latencyMs` (a network backend), where coalescing what
 * arrives during an append is what counts. Invariant: every timed run stores
 * exactly the stream's chunks (plus the run.accepted marker) and completes.
 */
import { randomUUID } from 'node:crypto'
import { EventType, InMemoryRunStore, memoryStream, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { pipeToRunLog } from '@tanstack/ai-sandbox'
import { BenchError, median } from './stats.js'

/** One row of the table. */
export interface RunDriverRow {
  readonly log: string
  readonly pump: 'plain iteration' | 'append per chunk' | 'pipeToRunLog' | 'pipeToRunLog + signal'
  readonly chunks: number
  readonly runs: number
  /** Median wall time of one run, in ms. */
  readonly medianMs: number
  /** `append` calls per run. */
  readonly appends: number
}

/** A run as a stream: RUN_STARTED, text deltas, RUN_FINISHED; each chunk after a microtask, as an async source yields. */
async function* runStream(runId: string, threadId: string, count: number): AsyncGenerator<StreamChunk> {
  yield { type: EventType.RUN_STARTED, runId, threadId, timestamp: Date.now() }
  for (let i = 0; i < count - 2; i++) yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: `token ${i} `, timestamp: Date.now() }
  yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: Date.now() }
}

/** `memoryStream` with its appends counted and, when `latencyMs` > 0, each one held that long first. */
function countedLog(runId: string, latencyMs: number): { log: StreamDurability; appends: () => number } {
  const inner = memoryStream({ runId })
  let appends = 0
  const log: StreamDurability = {
    ...inner,
    append: async (chunks) => {
      appends += 1
      if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs))
      return inner.append(chunks)
    },
  }
  return { log, appends: () => appends }
}

async function timeOne(pump: RunDriverRow['pump'], chunks: number, latencyMs: number): Promise<{ ms: number; appends: number }> {
  const runId = `bench-run-${randomUUID()}`
  const threadId = 'bench-thread'
  const { log, appends } = countedLog(runId, latencyMs)
  const stream = runStream(runId, threadId, chunks)
  const start = performance.now()
  let expected = chunks
  if (pump === 'plain iteration') {
    let seen = 0
    for await (const _chunk of stream) seen += 1
    if (seen !== chunks) throw new BenchError(`plain iteration saw ${seen} of ${chunks} chunks`)
    return { ms: performance.now() - start, appends: 0 }
  }
  if (pump === 'append per chunk') {
    for await (const chunk of stream) await log.append([chunk])
    await log.close()
  } else {
    const signal = pump === 'pipeToRunLog + signal' ? new AbortController().signal : undefined
    const record = await pipeToRunLog(stream, { runs: new InMemoryRunStore(), durability: log, runId, threadId, ...(signal ? { signal } : {}) })
    if (record?.status !== 'completed') throw new BenchError(`pipeToRunLog ended the run ${record?.status ?? 'without a record'}`)
    expected += 1 // the run.accepted marker
  }
  const ms = performance.now() - start
  const stored = (await log.snapshot()).length
  if (stored !== expected) throw new BenchError(`${pump} stored ${stored} chunks, expected ${expected}`)
  return { ms, appends: appends() }
}

/**
 * @param options.chunks - Chunks per run on the in-memory log (default 10,000).
 * @param options.slowChunks - Chunks per run on the slow log (default 1,000).
 * @param options.latencyMs - Latency of one append on the slow log, in ms (default 1).
 * @param options.runs - Timed runs per row (default 5), after one warm-up.
 */
export async function benchRunDriver(options: { chunks?: number; slowChunks?: number; latencyMs?: number; runs?: number } = {}): Promise<RunDriverRow[]> {
  const { chunks = 10_000, slowChunks = 1_000, latencyMs = 1, runs = 5 } = options
  const rows: RunDriverRow[] = []
  const cases: Array<{ log: string; count: number; latency: number }> = [
    { log: 'memoryStream', count: chunks, latency: 0 },
    { log: `memoryStream + ${latencyMs} ms per append`, count: slowChunks, latency: latencyMs },
  ]
  for (const { log, count, latency } of cases) {
    for (const pump of ['plain iteration', 'append per chunk', 'pipeToRunLog', 'pipeToRunLog + signal'] as const) {
      await timeOne(pump, count, latency)
      const samples: Array<{ ms: number; appends: number }> = []
      for (let i = 0; i < runs; i++) samples.push(await timeOne(pump, count, latency))
      rows.push({ log, pump, chunks: count, runs, medianMs: median(samples.map((s) => s.ms)), appends: median(samples.map((s) => s.appends)) })
    }
  }
  return rows
}
