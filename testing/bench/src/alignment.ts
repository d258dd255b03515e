/**
 * Replay alignment time (issue 11): a takeover re-translates the journal from
 * byte 0 and `alignToStoredLog` checks it against the run's stored event log,
 * suppressing the stored prefix. Measured over 10k, 100k and 1M stored chunks
 * in core's `memoryStream` (text deltas and tool calls with run-scoped ids),
 * with 1,000 new chunks past the stored log, beside a plain pass over the
 * same replay. Goal: linear in the log's length, 100k under 0.5 s.
 * Invariant: every timed run forwards exactly the new chunks.
 */
import { randomUUID } from 'node:crypto'
import { EventType, memoryStream, type StreamChunk } from '@tanstack/ai'
import { alignToStoredLog, createRunScopedIdGen, isBridgeCustomChunk } from '@tanstack/ai-sandbox'
import { BenchError, median } from './stats.js'

/** One row of the table. */
export interface AlignmentRow {
  /** Chunks already in the event log. */
  readonly storedChunks: number
  /** Chunks past the stored log, forwarded by alignment. */
  readonly forwardedChunks: number
  readonly runs: number
  /** Median wall time of one alignment (snapshot read, compare, forward), in ms. */
  readonly medianMs: number
  /** Median time per replayed chunk, in ns. */
  readonly nsPerChunk: number
  /** `nsPerChunk` over the smallest size's: 1 is perfectly linear. */
  readonly perChunkVsSmallest: number
  /** Median time of iterating the same replay with no alignment, in ms (the floor). */
  readonly passthroughMs: number
}

/** The new chunks each replay carries past the stored log. */
const NEW_CHUNKS = 1_000

/**
 * A translated run of `count` chunks as a harness emits it: a text message of
 * 40 deltas, then a tool call with 3 argument deltas and its result, repeated.
 * Ids come from the run-scoped generator, so two calls give equal chunks; the
 * timestamps differ, as they do on a real re-translation.
 */
function translatedRun(runId: string, threadId: string, count: number): StreamChunk[] {
  const genId = createRunScopedIdGen(runId)
  const chunks: StreamChunk[] = [{ type: EventType.RUN_STARTED, runId, threadId, timestamp: Date.now() }]
  while (chunks.length < count) {
    const messageId = genId()
    chunks.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant', timestamp: Date.now() })
    for (let i = 0; i < 40; i++) chunks.push({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: `the agent explains step ${i} of its plan `, timestamp: Date.now() })
    chunks.push({ type: EventType.TEXT_MESSAGE_END, messageId, timestamp: Date.now() })
    const toolCallId = genId()
    chunks.push({ type: EventType.TOOL_CALL_START, toolCallId, toolCallName: 'Bash', parentMessageId: messageId, timestamp: Date.now() })
    for (const delta of ['{"command":"pnpm vitest run ', '--project web ', 'src/app.test.ts","timeout":120000}']) chunks.push({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta, timestamp: Date.now() })
    chunks.push({ type: EventType.TOOL_CALL_END, toolCallId, timestamp: Date.now() })
    chunks.push({ type: EventType.TOOL_CALL_RESULT, toolCallId, messageId: genId(), content: '{"exitCode":0,"stdout":"Tests 42 passed (42)"}', timestamp: Date.now() })
  }
  return chunks.slice(0, count)
}

async function* replayOf(chunks: readonly StreamChunk[]): AsyncGenerator<StreamChunk> {
  yield* chunks
}

async function timeOnce(iterable: AsyncIterable<StreamChunk>): Promise<{ ms: number; count: number }> {
  const start = performance.now()
  let count = 0
  for await (const _ of iterable) count++
  return { ms: performance.now() - start, count }
}

/**
 * Time `runs` alignments of a replay against a stored log, for each size.
 * One `memoryStream` log per size holds the stored chunks (closed at the end).
 *
 * @param sizes - Stored-log lengths in chunks. Default 10k, 100k, 1M.
 * @param runs - Timed alignments per size, after one warm-up. Default 3.
 * @returns One row per size.
 * @throws BenchError `bench-failed` when an alignment forwards the wrong number of chunks.
 */
export async function benchAlignment(sizes: readonly number[] = [10_000, 100_000, 1_000_000], runs = 3): Promise<AlignmentRow[]> {
  const rows: AlignmentRow[] = []
  for (const size of sizes) {
    const runId = `bench-align-${randomUUID()}`
    const durability = memoryStream({ runId })
    await durability.append(translatedRun(runId, 'thread-bench', size))
    const replay = translatedRun(runId, 'thread-bench', size + NEW_CHUNKS)
    const aligned: number[] = []
    const plain: number[] = []
    for (let r = 0; r <= runs; r++) {
      const result = await timeOnce(alignToStoredLog(replayOf(replay), { durability, isOutOfBand: isBridgeCustomChunk }))
      if (result.count !== NEW_CHUNKS) throw new BenchError(`alignment over ${size} stored chunks forwarded ${result.count} chunks, expected ${NEW_CHUNKS}.`)
      const floor = await timeOnce(replayOf(replay))
      if (r === 0) continue // warm-up
      aligned.push(result.ms)
      plain.push(floor.ms)
    }
    await durability.close()
    const medianMs = median(aligned)
    const nsPerChunk = (medianMs * 1e6) / replay.length
    rows.push({ storedChunks: size, forwardedChunks: NEW_CHUNKS, runs, medianMs, nsPerChunk, perChunkVsSmallest: rows.length === 0 ? 1 : nsPerChunk / rows[0]!.nsPerChunk, passthroughMs: median(plain) })
  }
  return rows
}
