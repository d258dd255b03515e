/**
 * `alignedIfAttaching`, the harness attach path's alignment, against a log
 * written the way a durable transport writes it: from `chat()`'s output,
 * which is spec-normalized (fields outside AG-UI moved into
 * `metadata.tanstack`, TanStack usage rebuilt), not the adapter's raw chunks.
 * A takeover must still suppress exactly the delivered prefix, for every
 * kill point, and forward the adapter's own chunks.
 */
import { chat, EventType, memoryStream, type StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { alignedIfAttaching, chunkFingerprint, createRunScopedIdGen, JournalReplayDivergedError, SANDBOX_TOOL_CALL_KEY, type SandboxRunDurability } from '../../src/index.js'

/** A harness-like run: tool call with parsed `input`, provider-executed metadata, a RUN_FINISHED with model and usage. */
function rawRun(runId: string, threadId: string): StreamChunk[] {
  const genId = createRunScopedIdGen(runId)
  const messageId = genId()
  const resultId = genId()
  const input = { command: 'sleep 1 && echo done', description: 'Step one' }
  return [
    { type: EventType.RUN_STARTED, runId, threadId, timestamp: 1 },
    { type: EventType.CUSTOM, name: 'claude-code.session-id', value: { sessionId: 's-1' }, timestamp: 1 },
    { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant', timestamp: 1 },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: 'Starting.', timestamp: 1 },
    { type: EventType.TEXT_MESSAGE_END, messageId, timestamp: 1 },
    { type: EventType.TOOL_CALL_START, toolCallId: 'toolu_1', toolCallName: 'Bash', toolName: 'Bash', parentMessageId: messageId, index: 0, metadata: { providerExecuted: true }, timestamp: 1 },
    { type: EventType.TOOL_CALL_ARGS, toolCallId: 'toolu_1', delta: JSON.stringify(input), timestamp: 1 },
    { type: EventType.TOOL_CALL_END, toolCallId: 'toolu_1', toolName: 'Bash', input, timestamp: 1 },
    { type: EventType.TOOL_CALL_RESULT, toolCallId: 'toolu_1', messageId: resultId, content: 'done', timestamp: 1 },
    { type: EventType.RUN_FINISHED, runId, threadId, model: 'sonnet', finishReason: 'stop', usage: { promptTokens: 10, completionTokens: 5, totalTokens: 15 }, timestamp: 1 },
  ] as StreamChunk[]
}

/** What chat() delivers for an adapter that yields `chunks`. */
async function deliveredByChat(chunks: StreamChunk[], runId: string, threadId: string): Promise<StreamChunk[]> {
  const adapter = { kind: 'text', name: 'replay', model: 'm', '~types': undefined, chatStream: async function* () { yield* chunks }, structuredOutput: () => Promise.reject(new Error('unused')) }
  const out: StreamChunk[] = []
  for await (const chunk of chat({ adapter, runId, threadId, messages: [{ role: 'user', content: 'go' }] } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>) out.push(chunk)
  return out
}

async function* replay(chunks: StreamChunk[]): AsyncGenerator<StreamChunk> {
  for (const chunk of chunks) yield { ...chunk, timestamp: Date.now() } as StreamChunk
}

async function collect(chunks: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of chunks) out.push(chunk)
  return out
}

const durabilityOver = (log: ReturnType<typeof memoryStream>): SandboxRunDurability => ({ runs: undefined as never, log, attach: true })

describe('alignedIfAttaching over a log of chat() output', () => {
  it('the delivered shape differs from the raw one (why alignment compares in the delivered shape)', async () => {
    const raw = rawRun('run-shape', 't')
    const delivered = await deliveredByChat(raw, 'run-shape', 't')
    expect(delivered).toHaveLength(raw.length)
    expect(delivered.map(chunkFingerprint)).not.toEqual(raw.map(chunkFingerprint))
  })

  it('suppresses exactly the delivered prefix at every kill point and forwards the adapter chunks', async () => {
    for (let k = 0; k <= 10; k++) {
      const runId = `run-k${k}`
      const raw = rawRun(runId, 't')
      const delivered = await deliveredByChat(raw, runId, 't')
      const log = memoryStream({ runId })
      if (k > 0) await log.append(delivered.slice(0, k))
      const forwarded = await collect(alignedIfAttaching(replay(raw), durabilityOver(log)))
      expect(forwarded.map(chunkFingerprint), `kill after ${k} chunk(s)`).toEqual(raw.slice(k).map(chunkFingerprint))
    }
  })

  it('aligns a log written through withSandbox, whose harness TOOL_CALL_START carries the { sandboxObserved: true } marker', async () => {
    const runId = 'run-marked'
    const raw = rawRun(runId, 't')
    // What withSandbox's tool history does to a provider-executed TOOL_CALL_START on its way to the log (spec 002's stored literal).
    const delivered = (await deliveredByChat(raw, runId, 't')).map((chunk) =>
      chunk.type === EventType.TOOL_CALL_START ? ({ ...chunk, metadata: { ...(chunk as { metadata?: object }).metadata, [SANDBOX_TOOL_CALL_KEY]: true } } as StreamChunk) : chunk,
    )
    const log = memoryStream({ runId })
    await log.append(delivered.slice(0, 7))
    const forwarded = await collect(alignedIfAttaching(replay(raw), durabilityOver(log)))
    expect(forwarded.map(chunkFingerprint)).toEqual(raw.slice(7).map(chunkFingerprint))
  })

  it('still throws when the replay really differs from the log', async () => {
    const raw = rawRun('run-diverged', 't')
    const delivered = await deliveredByChat(raw, 'run-diverged', 't')
    const log = memoryStream({ runId: 'run-diverged' })
    await log.append(delivered.slice(0, 9))
    const changed = raw.map((chunk) => (chunk.type === EventType.TOOL_CALL_END ? ({ ...chunk, input: { command: 'rm -rf /' } } as StreamChunk) : chunk))
    const error = await collect(alignedIfAttaching(replay(changed), durabilityOver(log))).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(JournalReplayDivergedError)
    expect((error as JournalReplayDivergedError).index).toBe(7)
  })
})
