/**
 * The run driver (`pipeToRunLog`, `RunController`) against core's real
 * `memoryStream` and `InMemoryRunStore`, with real `chat()` streams where the
 * behaviour comes from `chat()` (an agent loop's several `RUN_FINISHED`, an
 * abort). Every terminal path, every failing store / log call, cancel versus
 * disconnect, concurrency, `attach` and `drain`. Failures are injected by
 * wrapping the real store and log, never by replacing them.
 */
import { chat, EventType, InMemoryRunStore, memoryStream, requestRunCancel, RUN_ACCEPTED_EVENT, RUN_CANCEL_REASON, toolDefinition, type RunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { pipeToRunLog, RunController, SandboxConfigError } from '../../src/index.js'
import { noteRunDetached } from '../../src/durability/detach-notice.js'

const threadId = 'thread-1'
const newRunId = (): string => `run-${randomUUID()}`

/** A real InternalLogger whose `errors` / `warn` lines are collected. */
function capturingLogger() {
  const errors: string[] = []
  const warns: string[] = []
  const sink = (): void => {}
  const logger = resolveDebugOption({ logger: { debug: sink, info: sink, warn: (m: string) => warns.push(m), error: (m: string) => errors.push(m) } })
  return { logger, errors, warns }
}

/** Core's memoryStream, with its calls counted and optionally failing (the Nth append, every close) or held (appends wait for `gate`). */
function spyLog(runId: string, options: { failAppendCall?: number; failClose?: boolean; gate?: Promise<void> } = {}) {
  const inner = memoryStream({ runId })
  const calls = { append: 0, close: 0, batches: [] as number[] }
  const log: StreamDurability = {
    ...inner,
    append: async (chunks) => {
      calls.append += 1
      calls.batches.push(chunks.length)
      if (options.gate) await options.gate
      if (calls.append === options.failAppendCall) throw new Error('append refused by the log')
      return inner.append(chunks)
    },
    close: async () => {
      calls.close += 1
      if (options.failClose) throw new Error('close failed')
      return inner.close()
    },
  }
  return { log, calls, inner }
}

/** An InMemoryRunStore whose `method` throws (synchronously) or rejects. */
function failingStore(method: 'createOrResume' | 'update' | 'get', mode: 'throw' | 'reject') {
  const inner = new InMemoryRunStore()
  const fail = (): never => {
    throw new Error(`${method} is down`)
  }
  const runs: RunStore = {
    createOrResume: (input) => inner.createOrResume(input),
    update: (runId, patch) => inner.update(runId, patch),
    get: (runId) => inner.get(runId),
    findActiveRun: (id) => inner.findActiveRun(id),
    [method]: mode === 'throw' ? fail : () => Promise.reject(new Error(`${method} is down`)),
  }
  return { runs, inner }
}

/** The stored chunks' types, without the run.accepted marker a fresh run opens with. */
async function storedTypes(log: Pick<StreamDurability, 'snapshot'>): Promise<string[]> {
  return (await log.snapshot()).map(({ chunk }) => chunk).filter((c) => !(c.type === EventType.CUSTOM && c.name === RUN_ACCEPTED_EVENT)).map((c) => c.type)
}

async function* fromChunks(chunks: StreamChunk[], state: { finished?: boolean } = {}): AsyncGenerator<StreamChunk> {
  try {
    yield* chunks
  } finally {
    state.finished = true
  }
}

const started = (runId: string): StreamChunk => ({ type: EventType.RUN_STARTED, runId, threadId, timestamp: 1 })
const text = (delta: string): StreamChunk => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta, timestamp: 1 })
const finished = (runId: string, extra: Record<string, unknown> = {}): StreamChunk => ({ type: EventType.RUN_FINISHED, runId, threadId, timestamp: 1, ...extra }) as StreamChunk
const runError = (message: string, code: string): StreamChunk => ({ type: EventType.RUN_ERROR, message, code, timestamp: 1 }) as StreamChunk

/** A stream fed by hand: `push`, `end`; `returned` once its consumer let go. */
class Channel implements AsyncIterable<StreamChunk> {
  private readonly items: StreamChunk[] = []
  private ended = false
  private wake: (() => void) | undefined
  returned = false

  push(...chunks: StreamChunk[]): void {
    this.items.push(...chunks)
    this.wake?.()
  }

  end(): void {
    this.ended = true
    this.wake?.()
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamChunk> {
    try {
      for (;;) {
        const next = this.items.shift()
        if (next) yield next
        else if (this.ended) return
        else await new Promise<void>((resolve) => (this.wake = resolve))
      }
    } finally {
      this.returned = true
    }
  }
}

/** A text adapter for real `chat()`: turn 1 calls the `add` tool, turn 2 answers; each turn ends with its own RUN_FINISHED. */
function toolLoopAdapter(turn2?: (signal: AbortSignal) => Promise<void>) {
  let turn = 0
  return {
    kind: 'text',
    name: 'scripted',
    model: 'm',
    '~types': undefined,
    chatStream: async function* ({ request }: { request: { signal: AbortSignal } }) {
      turn += 1
      yield { type: EventType.RUN_STARTED, runId: 'r', threadId, timestamp: 1 }
      if (turn === 1) {
        yield { type: EventType.TOOL_CALL_START, toolCallId: 'tc1', toolCallName: 'add', toolName: 'add', index: 0, timestamp: 1 }
        yield { type: EventType.TOOL_CALL_ARGS, toolCallId: 'tc1', delta: '{"a":1}', timestamp: 1 }
        yield { type: EventType.TOOL_CALL_END, toolCallId: 'tc1', toolName: 'add', input: { a: 1 }, timestamp: 1 }
        yield { type: EventType.RUN_FINISHED, runId: 'r', threadId, finishReason: 'tool_calls', usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 }, timestamp: 1 }
        return
      }
      if (turn2) await turn2(request.signal)
      yield { type: EventType.TEXT_MESSAGE_START, messageId: 'm2', role: 'assistant', timestamp: 1 }
      yield { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm2', delta: 'the sum is 2', timestamp: 1 }
      yield { type: EventType.TEXT_MESSAGE_END, messageId: 'm2', timestamp: 1 }
      yield { type: EventType.RUN_FINISHED, runId: 'r', threadId, finishReason: 'stop', usage: { promptTokens: 5, completionTokens: 7, totalTokens: 12 }, timestamp: 1 }
    },
    structuredOutput: () => Promise.reject(new Error('unused')),
  }
}

function toolLoopChat(runId: string, options: { turn2?: (signal: AbortSignal) => Promise<void>; abortController?: AbortController; onToolCall?: () => void } = {}): AsyncIterable<StreamChunk> {
  const add = toolDefinition({ name: 'add', description: 'adds one', inputSchema: z.object({ a: z.number() }) }).server(({ a }: { a: number }) => {
    options.onToolCall?.()
    return Promise.resolve({ sum: a + 1 })
  })
  return chat({ adapter: toolLoopAdapter(options.turn2), runId, threadId, messages: [{ role: 'user', content: 'add one to 1' }], tools: [add], ...(options.abortController ? { abortController: options.abortController } : {}) } as never) as AsyncIterable<StreamChunk>
}

describe('pipeToRunLog: terminal paths', () => {
  it('a real chat() agent loop: every chunk stored once in order, completed with the LAST RUN_FINISHED usage, log closed', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const { log, calls, inner } = spyLog(runId)
    const delivered: StreamChunk[] = []
    const stream = (async function* () {
      for await (const chunk of toolLoopChat(runId)) {
        delivered.push(chunk)
        yield chunk
      }
    })()

    const record = await pipeToRunLog(stream, { runs, durability: log, runId, threadId })

    expect(delivered.filter((c) => c.type === EventType.RUN_FINISHED)).toHaveLength(2)
    const stored = (await inner.snapshot()).map(({ chunk }) => chunk)
    expect(stored[0]).toMatchObject({ type: EventType.CUSTOM, name: RUN_ACCEPTED_EVENT })
    expect(stored.slice(1)).toEqual(delivered)
    expect(new Set((await inner.snapshot()).map(({ offset }) => offset)).size).toBe(stored.length)
    expect(record).toMatchObject({ runId, threadId, status: 'completed', usage: { promptTokens: 5, completionTokens: 7, totalTokens: 12 } })
    expect(record?.finishedAt).toBeTypeOf('number')
    expect(record?.error).toBeUndefined()
    expect(calls.close).toBe(1)
    // The log is closed: a from-start read ends on its own.
    const read: string[] = []
    for await (const { chunk } of inner.read('-1')) read.push(chunk.type)
    expect(read).toHaveLength(stored.length)
  })

  it('the last terminal chunk decides: RUN_FINISHED then RUN_ERROR is failed, RUN_ERROR then RUN_FINISHED is completed', async () => {
    const a = newRunId()
    const runs = new InMemoryRunStore()
    const failed = await pipeToRunLog(fromChunks([started(a), finished(a), runError('model overloaded', 'overloaded')]), { runs, durability: memoryStream({ runId: a }), runId: a, threadId })
    expect(failed).toMatchObject({ status: 'failed', error: { message: 'model overloaded', code: 'overloaded' } })
    expect(await storedTypes(memoryStream({ runId: a }))).toEqual(['RUN_STARTED', 'RUN_FINISHED', 'RUN_ERROR'])

    const b = newRunId()
    const completed = await pipeToRunLog(fromChunks([started(b), runError('transient', 'retry'), finished(b)]), { runs, durability: memoryStream({ runId: b }), runId: b, threadId })
    expect(completed).toMatchObject({ status: 'completed' })
    expect(completed?.error).toBeUndefined()
  })

  it('a RUN_ERROR from the stream fails the run with its message and code and appends nothing of its own', async () => {
    const runId = newRunId()
    const record = await pipeToRunLog(fromChunks([started(runId), text('hi'), runError('bad key', 'auth')]), { runs: new InMemoryRunStore(), durability: memoryStream({ runId }), runId, threadId })
    expect(record).toMatchObject({ status: 'failed', error: { message: 'bad key', code: 'auth' } })
    expect(await storedTypes(memoryStream({ runId }))).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_CONTENT', 'RUN_ERROR'])
  })

  it('a thrown stream error becomes a terminal RUN_ERROR in the log and the record error, even after a RUN_FINISHED', async () => {
    const runId = newRunId()
    const stream = (async function* () {
      yield started(runId)
      yield finished(runId, { finishReason: 'tool_calls' })
      throw Object.assign(new Error('the CLI crashed'), { code: 'cli_crash' })
    })()
    const record = await pipeToRunLog(stream, { runs: new InMemoryRunStore(), durability: memoryStream({ runId }), runId, threadId })
    expect(record).toMatchObject({ status: 'failed', error: { message: 'the CLI crashed', code: 'cli_crash' } })
    const stored = (await memoryStream({ runId }).snapshot()).map(({ chunk }) => chunk)
    expect(stored.at(-1)).toMatchObject({ type: EventType.RUN_ERROR, message: 'the CLI crashed', code: 'cli_crash', error: { message: 'the CLI crashed', code: 'cli_crash' } })
    expect(await storedTypes(memoryStream({ runId }))).toEqual(['RUN_STARTED', 'RUN_FINISHED', 'RUN_ERROR'])
  })

  it('a stream whose iterator cannot even be created is a thrown error too', async () => {
    const runId = newRunId()
    const broken = { [Symbol.asyncIterator]: () => { throw new Error('no iterator') } } as AsyncIterable<StreamChunk>
    const record = await pipeToRunLog(broken, { runs: new InMemoryRunStore(), durability: memoryStream({ runId }), runId, threadId })
    expect(record).toMatchObject({ status: 'failed', error: { message: 'no iterator' } })
  })

  it('a stream that ends without any terminal chunk fails with stream-ended-without-terminal', async () => {
    const runId = newRunId()
    const record = await pipeToRunLog(fromChunks([started(runId), text('half')]), { runs: new InMemoryRunStore(), durability: memoryStream({ runId }), runId, threadId })
    expect(record).toMatchObject({ status: 'failed', error: { code: 'stream-ended-without-terminal' } })
    const last = (await memoryStream({ runId }).snapshot()).at(-1)?.chunk
    expect(last).toMatchObject({ type: EventType.RUN_ERROR, code: 'stream-ended-without-terminal' })
  })

  it('a stream that ends unfinished because withSandbox detached its run leaves the record running and the log open; a detach of another run changes nothing', async () => {
    const runId = newRunId()
    const { log, calls } = spyLog(runId)
    const detaching = (async function* () {
      yield started(runId)
      yield text('half')
      noteRunDetached(`${runId}-other`) // another run's detach is not this one's
      noteRunDetached(runId) // what withSandbox's detach does, before chat()'s stream ends
    })()
    const record = await pipeToRunLog(detaching, { runs: new InMemoryRunStore(), durability: log, runId, threadId })
    expect(record).toMatchObject({ status: 'running' })
    expect(record?.finishedAt).toBeUndefined()
    expect(calls.close, 'the log stays open for the next host').toBe(0)
    expect(await storedTypes(memoryStream({ runId })), 'no RUN_ERROR was appended').toEqual(['RUN_STARTED', 'TEXT_MESSAGE_CONTENT'])

    // The pump stopped listening with its run's end: a later detach note for the id reaches nobody.
    const next = newRunId()
    noteRunDetached(next)
    expect(await pipeToRunLog(fromChunks([started(next), text('half')]), { runs: new InMemoryRunStore(), durability: memoryStream({ runId: next }), runId: next, threadId })).toMatchObject({ status: 'failed', error: { code: 'stream-ended-without-terminal' } })
  })

  it('a RUN_FINISHED with an interrupt outcome leaves the run interrupted, without finishedAt', async () => {
    const runId = newRunId()
    const record = await pipeToRunLog(fromChunks([started(runId), finished(runId, { outcome: { type: 'interrupt', interrupts: [] } })]), { runs: new InMemoryRunStore(), durability: memoryStream({ runId }), runId, threadId })
    expect(record?.status).toBe('interrupted')
    expect(record?.finishedAt).toBeUndefined()
  })

  it('strips the durability batch hint, as core stores the chunk, without changing the chunk it was given', async () => {
    const runId = newRunId()
    const hinted = { type: EventType.CUSTOM, name: 'progress', value: 1, timestamp: 1, metadata: { tanstack: { batch: true, index: 3 } } } as StreamChunk
    await pipeToRunLog(fromChunks([started(runId), hinted, finished(runId)]), { runs: new InMemoryRunStore(), durability: memoryStream({ runId }), runId, threadId })
    const stored = (await memoryStream({ runId }).snapshot()).map(({ chunk }) => chunk).find((c) => c.type === EventType.CUSTOM && c.name === 'progress')
    expect(stored).toEqual({ type: EventType.CUSTOM, name: 'progress', value: 1, timestamp: 1, metadata: { tanstack: { index: 3 } } })
    expect(hinted).toMatchObject({ metadata: { tanstack: { batch: true, index: 3 } } })
  })

  it('coalesces chunks that arrive while an append is in flight, in order, at most 32 per append', async () => {
    const runId = newRunId()
    let release = (): void => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    const { log, calls, inner } = spyLog(runId, { gate })
    const chunks = [started(runId), ...Array.from({ length: 100 }, (_, i) => text(String(i))), finished(runId)]
    // The first append (the run.accepted marker) is held until the stream has handed over 32 chunks.
    const stream = (async function* () {
      for (const [i, chunk] of chunks.entries()) {
        if (i === 31) release()
        yield chunk
      }
    })()
    const record = await pipeToRunLog(stream, { runs: new InMemoryRunStore(), durability: log, runId, threadId })
    expect(record).toMatchObject({ status: 'completed' })
    const stored = (await inner.snapshot()).map(({ chunk }) => chunk)
    expect(stored.slice(1)).toEqual(chunks)
    expect(calls.batches.slice(0, 2)).toEqual([1, 32])
    expect(Math.max(...calls.batches)).toBe(32)
    expect(calls.append).toBeLessThan(chunks.length)
  })

  it('does not drive a run whose record is already terminal: the stream is never read', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId, threadId, startedAt: 1 })
    await runs.update(runId, { status: 'completed', finishedAt: 2 })
    const { logger, errors } = capturingLogger()
    let bodyRan = false
    const stream = (async function* () {
      bodyRan = true
      yield started(runId)
    })()
    const record = await pipeToRunLog(stream, { runs, durability: memoryStream({ runId }), runId, threadId, logger })
    expect(record).toMatchObject({ status: 'completed', finishedAt: 2 })
    expect(bodyRan).toBe(false)
    expect(await memoryStream({ runId }).snapshot()).toEqual([])
    expect(errors.some((m) => m.includes('already completed'))).toBe(true)
  })
})

describe('pipeToRunLog: abort is a cancel only when one was requested', () => {
  it('a disconnect (abort, no cancel) after the first of several RUN_FINISHED leaves the record running, appends no terminal, still closes the log', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const { log, calls, inner } = spyLog(runId)
    const stream = new Channel()
    const controller = new AbortController()
    const done = pipeToRunLog(stream, { runs, durability: log, runId, threadId, signal: controller.signal })
    stream.push(started(runId), finished(runId, { finishReason: 'tool_calls' }))
    // The stream now blocks; the disconnect must not wait for it.
    await waitForStored(inner, 3)
    controller.abort()
    const record = await done
    expect(record?.status).toBe('running')
    expect(record?.finishedAt).toBeUndefined()
    expect(await storedTypes(inner)).toEqual(['RUN_STARTED', 'RUN_FINISHED'])
    expect(calls.close).toBe(1)
  })

  it('an abort with RUN_CANCEL_REASON is a cancel: aborted with finishedAt, a RUN_ERROR aborted in the log', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const stream = new Channel()
    const controller = new AbortController()
    const done = pipeToRunLog(stream, { runs, durability: memoryStream({ runId }), runId, threadId, signal: controller.signal })
    stream.push(started(runId), text('working'))
    await waitForStored(memoryStream({ runId }), 3)
    controller.abort(RUN_CANCEL_REASON)
    const record = await done
    expect(record).toMatchObject({ status: 'aborted' })
    expect(record?.finishedAt).toBeTypeOf('number')
    expect((await memoryStream({ runId }).snapshot()).at(-1)?.chunk).toMatchObject({ type: EventType.RUN_ERROR, code: 'aborted' })
  })

  it('a plain abort on a record with requestRunCancel is a cancel too (the record band)', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const stream = new Channel()
    const controller = new AbortController()
    const done = pipeToRunLog(stream, { runs, durability: memoryStream({ runId }), runId, threadId, signal: controller.signal })
    stream.push(started(runId))
    await waitForStored(memoryStream({ runId }), 2)
    await requestRunCancel(runs, runId)
    controller.abort()
    expect(await done).toMatchObject({ status: 'aborted', cancelRequested: true })
  })

  it('a stream that stops without a terminal chunk on a record with cancelRequested is aborted, not failed', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const stream = new Channel()
    const done = pipeToRunLog(stream, { runs, durability: memoryStream({ runId }), runId, threadId })
    stream.push(started(runId))
    await waitForStored(memoryStream({ runId }), 2)
    await requestRunCancel(runs, runId)
    stream.end()
    expect(await done).toMatchObject({ status: 'aborted' })
  })

  it('a cancelled run whose agent died with an error of its own (its sandbox destroyed) is aborted, not failed, and nothing more is appended', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const stream = new Channel()
    const done = pipeToRunLog(stream, { runs, durability: memoryStream({ runId }), runId, threadId })
    stream.push(started(runId))
    await waitForStored(memoryStream({ runId }), 2)
    await requestRunCancel(runs, runId)
    stream.push(runError('the CLI was killed by SIGKILL', 'harness-exit'))
    stream.end()
    const record = await done
    expect(record).toMatchObject({ status: 'aborted' })
    expect(record?.error).toBeUndefined()
    expect(await storedTypes(memoryStream({ runId }))).toEqual(['RUN_STARTED', 'RUN_ERROR'])
  })

  it('a cancelled run that ended after a tool-calling turn is aborted, not completed', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const stream = new Channel()
    const done = pipeToRunLog(stream, { runs, durability: memoryStream({ runId }), runId, threadId })
    stream.push(started(runId), finished(runId, { finishReason: 'tool_calls' }))
    await waitForStored(memoryStream({ runId }), 3)
    await requestRunCancel(runs, runId)
    stream.end()
    expect(await done).toMatchObject({ status: 'aborted' })
  })

  it('without a cancel, a stream that ends after a tool-calling turn still completes (the last RUN_FINISHED decides)', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const record = await pipeToRunLog(fromChunks([started(runId), finished(runId, { finishReason: 'tool_calls' })]), { runs, durability: memoryStream({ runId }), runId, threadId })
    expect(record).toMatchObject({ status: 'completed' })
  })

  it('a real chat() cancelled mid tool loop through its abortController and the same signal', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const abortController = new AbortController()
    let toolCalls = 0
    const record = pipeToRunLog(toolLoopChat(runId, { abortController, turn2: () => new Promise(() => {}), onToolCall: () => { toolCalls += 1 } }), { runs, durability: memoryStream({ runId }), runId, threadId, signal: abortController.signal })
    await waitForStored(memoryStream({ runId }), 7)
    abortController.abort(RUN_CANCEL_REASON)
    expect(await record).toMatchObject({ status: 'aborted' })
    expect(toolCalls).toBe(1)
    const types = await storedTypes(memoryStream({ runId }))
    expect(types.filter((t) => t === 'RUN_FINISHED')).toHaveLength(1)
    expect(types.at(-1)).toBe('RUN_ERROR')
  })

  it('a real chat() tool loop disconnected after its first RUN_FINISHED stays running, whether chat() ends quietly or throws', async () => {
    const cases: Array<(ac: AbortController) => Parameters<typeof toolLoopChat>[1]> = [
      // Aborted as turn 2 starts, by an adapter that goes on: chat() stops and ends quietly.
      (abortController) => ({
        abortController,
        turn2: () => {
          abortController.abort()
          return Promise.resolve()
        },
      }),
      // Aborted as turn 2 starts, by an adapter that honours the signal: chat() rethrows its AbortError.
      (abortController) => ({
        abortController,
        turn2: (signal) => {
          abortController.abort()
          return Promise.reject(Object.assign(new Error(`aborted: ${String(signal.aborted)}`), { name: 'AbortError' }))
        },
      }),
    ]
    for (const options of cases) {
      const runId = newRunId()
      const abortController = new AbortController()
      const { log, calls, inner } = spyLog(runId)
      const record = await pipeToRunLog(toolLoopChat(runId, options(abortController)), { runs: new InMemoryRunStore(), durability: log, runId, threadId, signal: abortController.signal })
      expect(record?.status).toBe('running')
      const types = await storedTypes(inner)
      expect(types).toContain('RUN_FINISHED')
      expect(types).not.toContain('RUN_ERROR')
      expect(calls.close).toBe(1)
    }
  })

  it('an already aborted signal creates the record, reads nothing, and closes the log', async () => {
    const runId = newRunId()
    const { log, calls } = spyLog(runId)
    const record = await pipeToRunLog(fromChunks([started(runId)]), { runs: new InMemoryRunStore(), durability: log, runId, threadId, signal: AbortSignal.abort() })
    expect(record?.status).toBe('running')
    expect(calls.close).toBe(1)
  })
})

describe('pipeToRunLog is total', () => {
  for (const method of ['createOrResume', 'update', 'get'] as const) {
    for (const mode of ['throw', 'reject'] as const) {
      it(`a store whose ${method} ${mode}s: resolves, the log still gets every chunk and is closed, the failure is logged`, async () => {
        const runId = newRunId()
        const { runs, inner } = failingStore(method, mode)
        const { log, calls, inner: stored } = spyLog(runId)
        const { logger, errors } = capturingLogger()
        const result = await pipeToRunLog(fromChunks([started(runId), text('a'), finished(runId)]), { runs, durability: log, runId, threadId, logger })
        expect(await storedTypes(stored)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_CONTENT', 'RUN_FINISHED'])
        expect(calls.close).toBe(1)
        expect(errors.length).toBeGreaterThan(0)
        expect(errors.every((m) => m.includes('run driver: '))).toBe(true)
        if (method === 'createOrResume') expect(result).toBeNull()
        if (method === 'update') expect(result?.status).toBe('running')
        if (method === 'get') {
          expect(result).toBeNull()
          expect((await inner.get(runId))?.status).toBe('completed')
        }
      })
    }
  }

  it('a failing append ends the run: no retry, nothing appended after it, the stream released, the record failed, the log closed', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const { log, calls, inner } = spyLog(runId, { failAppendCall: 2 })
    const { logger, errors } = capturingLogger()
    const state: { finished?: boolean } = {}
    const chunks = [started(runId), ...Array.from({ length: 10 }, (_, i) => text(String(i))), finished(runId)]
    const record = await pipeToRunLog(fromChunks(chunks, state), { runs, durability: log, runId, threadId, logger })

    expect(record).toMatchObject({ status: 'failed', error: { code: 'run-log-append-failed' } })
    expect(state.finished).toBe(true)
    const stored = (await inner.snapshot()).map(({ chunk }) => chunk)
    // What was stored is the marker, the first batch, then the terminal RUN_ERROR: a prefix of the stream, never a repeat.
    const body = stored.slice(1, -1)
    expect(body).toEqual(chunks.slice(0, body.length))
    expect(body.length).toBe(calls.batches[0]! - 1)
    expect(stored.at(-1)).toMatchObject({ type: EventType.RUN_ERROR, code: 'run-log-append-failed' })
    expect(calls.append).toBe(3)
    expect(calls.close).toBe(1)
    expect(errors.some((m) => m.includes('append'))).toBe(true)
  })

  it('an append that fails after the stream ended (the batch with RUN_FINISHED) fails the run instead of completing it with its tail missing', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    const inner = memoryStream({ runId })
    const log: StreamDurability = {
      ...inner,
      append: async (chunks) => {
        if (chunks.some((chunk) => chunk.type === EventType.RUN_FINISHED)) throw new Error('append refused by the log')
        return inner.append(chunks)
      },
    }
    const { logger } = capturingLogger()
    const record = await pipeToRunLog(fromChunks([started(runId), text('a'), finished(runId)]), { runs, durability: log, runId, threadId, logger })
    expect(record).toMatchObject({ status: 'failed', error: { code: 'run-log-append-failed' } })
    expect((await inner.snapshot()).map(({ chunk }) => chunk.type)).not.toContain(EventType.RUN_FINISHED)
  })

  it('a failing close still resolves with the settled record and is logged', async () => {
    const runId = newRunId()
    const { log, calls } = spyLog(runId, { failClose: true })
    const { logger, errors } = capturingLogger()
    const record = await pipeToRunLog(fromChunks([started(runId), finished(runId)]), { runs: new InMemoryRunStore(), durability: log, runId, threadId, logger })
    expect(record?.status).toBe('completed')
    expect(calls.close).toBe(1)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toContain('run driver: closing the run log failed')
  })

  it('a logger that throws cannot break it', async () => {
    const runId = newRunId()
    const { runs } = failingStore('update', 'reject')
    const thrower = () => {
      throw new Error('logger down')
    }
    const logger = resolveDebugOption({ logger: { debug: thrower, info: thrower, warn: thrower, error: thrower } })
    const record = await pipeToRunLog(fromChunks([started(runId), finished(runId)]), { runs, durability: spyLog(runId, { failClose: true }).log, runId, threadId, logger })
    expect(record?.status).toBe('running')
  })

  it('a resumed record with another threadId keeps its own, with a warning', async () => {
    const runId = newRunId()
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId, threadId: 'thread-other', startedAt: 1 })
    const { logger, warns } = capturingLogger()
    const record = await pipeToRunLog(fromChunks([started(runId), finished(runId)]), { runs, durability: memoryStream({ runId }), runId, threadId, logger })
    expect(record).toMatchObject({ threadId: 'thread-other', status: 'completed' })
    expect(warns).toHaveLength(1)
    // A resumed run gets no second run.accepted marker.
    expect((await memoryStream({ runId }).snapshot()).map(({ chunk }) => chunk.type)).toEqual(['RUN_STARTED', 'RUN_FINISHED'])
  })

  it('refuses bad options synchronously with SandboxConfigError naming the field', () => {
    const runId = newRunId()
    const base = { runs: new InMemoryRunStore(), durability: memoryStream({ runId }), runId }
    const fieldOf = (call: () => unknown): string | undefined => {
      try {
        call()
      } catch (error) {
        return error instanceof SandboxConfigError ? error.field : 'not a SandboxConfigError'
      }
      return undefined
    }
    expect(fieldOf(() => pipeToRunLog(fromChunks([]), base as never))).toBe('pipeToRunLog.threadId')
    expect(fieldOf(() => pipeToRunLog(fromChunks([]), { ...base, threadId: '' }))).toBe('pipeToRunLog.threadId')
    expect(fieldOf(() => pipeToRunLog(fromChunks([]), { ...base, threadId, durability: {} as never }))).toBe('pipeToRunLog.durability')
    expect(fieldOf(() => pipeToRunLog(fromChunks([]), { ...base, threadId, runs: {} as never }))).toBe('pipeToRunLog.runs')
    expect(fieldOf(() => pipeToRunLog(fromChunks([]), { ...base, threadId, batch: 4 } as never))).toBe('pipeToRunLog.batch')
    expect(fieldOf(() => pipeToRunLog([] as never, { ...base, threadId }))).toBe('pipeToRunLog.stream')
    expect(() => pipeToRunLog(fromChunks([]), base as never)).toThrow(/threadId/)
  })
})

describe('RunController', () => {
  const newController = (runs: RunStore = new InMemoryRunStore()) => new RunController({ runs, durability: (runId) => memoryStream({ runId }) })

  it('runs the spec example: start, attach from -1 until the log closes, done, drain', async () => {
    const runs = new InMemoryRunStore()
    const controller = newController(runs)
    const runId = newRunId()
    const handle = controller.start({ runId, threadId, stream: toolLoopChat(runId) })
    expect(handle.runId).toBe(runId)
    const seen: Array<{ offset: string; type: string }> = []
    for await (const { offset, chunk } of controller.attach(runId, '-1')) seen.push({ offset, type: chunk.type })
    const record = await handle.done
    await controller.drain()
    expect(record?.status).toBe('completed')
    const stored = await memoryStream({ runId }).snapshot()
    expect(seen).toEqual(stored.map(({ offset, chunk }) => ({ offset, type: chunk.type })))
    expect(seen.filter((s) => s.type === 'RUN_FINISHED')).toHaveLength(2)
  })

  it('attach from a mid offset yields only what follows it', async () => {
    const controller = newController()
    const runId = newRunId()
    await controller.start({ runId, threadId, stream: fromChunks([started(runId), text('a'), text('b'), text('c'), finished(runId)]) }).done
    const stored = await memoryStream({ runId }).snapshot()
    const after: string[] = []
    for await (const { offset } of controller.attach(runId, stored[2]!.offset)) after.push(offset)
    expect(after).toEqual(stored.slice(3).map(({ offset }) => offset))
  })

  it('two parallel runs each get their own log; the first one closing never ends the second', async () => {
    const runs = new InMemoryRunStore()
    const controller = newController(runs)
    const [a, b] = [newRunId(), newRunId()]
    const streamA = new Channel()
    const streamB = new Channel()
    const handleA = controller.start({ runId: a, threadId, stream: streamA })
    const handleB = controller.start({ runId: b, threadId, stream: streamB })
    const tailB = (async () => {
      const chunks: StreamChunk[] = []
      for await (const { chunk } of controller.attach(b, '-1')) chunks.push(chunk)
      return chunks
    })()
    streamA.push(started(a), text('a1'))
    streamB.push(started(b), text('b1'))
    streamA.push(text('a2'), finished(a))
    streamB.push(text('b2'))
    streamA.end()
    expect((await handleA.done)?.status).toBe('completed')
    // A is closed; B keeps going and its tailer keeps receiving.
    streamB.push(text('b3'), finished(b))
    streamB.end()
    expect((await handleB.done)?.status).toBe('completed')
    const deltas = (chunks: StreamChunk[]) => chunks.flatMap((c) => (c.type === EventType.TEXT_MESSAGE_CONTENT ? [c.delta] : []))
    expect(deltas(await tailB)).toEqual(['b1', 'b2', 'b3'])
    expect(deltas((await memoryStream({ runId: a }).snapshot()).map(({ chunk }) => chunk))).toEqual(['a1', 'a2'])
    expect(await storedTypes(memoryStream({ runId: b }))).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_CONTENT', 'RUN_FINISHED'])
  })

  it('drain awaits every in-flight run, including one started while draining', async () => {
    const runs = new InMemoryRunStore()
    const controller = newController(runs)
    const ids = [newRunId(), newRunId(), newRunId()]
    const streams = ids.map(() => new Channel())
    ids.forEach((runId, i) => controller.start({ runId, threadId, stream: streams[i]! }))
    const drained = controller.drain()
    const late = newRunId()
    const lateStream = new Channel()
    controller.start({ runId: late, threadId, stream: lateStream })
    for (const [i, runId] of ids.entries()) {
      streams[i]!.push(started(runId), finished(runId))
      streams[i]!.end()
    }
    lateStream.push(started(late), finished(late))
    lateStream.end()
    await drained
    const statuses = await Promise.all([...ids, late].map(async (runId) => (await runs.get(runId))?.status))
    expect(statuses).toEqual(['completed', 'completed', 'completed', 'completed'])
    await controller.drain()
  })

  it('refuses a second start of a run id still in flight, and bad input, with SandboxConfigError', async () => {
    const controller = newController()
    const runId = newRunId()
    const stream = new Channel()
    const handle = controller.start({ runId, threadId, stream })
    expect(() => controller.start({ runId, threadId, stream: fromChunks([]) })).toThrow(SandboxConfigError)
    expect(() => controller.start({ runId: newRunId(), stream: fromChunks([]) } as never)).toThrow(/RunController\.start\.threadId/)
    expect(() => new RunController({ runs: new InMemoryRunStore(), durability: memoryStream({ runId }) as never })).toThrow(/RunController\.durability/)
    expect(() => controller.attach('', '-1')).toThrow(/RunController\.attach\.runId/)
    stream.push(started(runId), finished(runId))
    stream.end()
    expect((await handle.done)?.status).toBe('completed')
  })

  it('a durability factory that throws fails that run without reading its stream, and logs it', async () => {
    const runs = new InMemoryRunStore()
    const { logger, errors } = capturingLogger()
    const controller = new RunController({
      runs,
      logger,
      durability: () => {
        throw new Error('no log backend')
      },
    })
    const runId = newRunId()
    const state: { finished?: boolean } = {}
    const record = await controller.start({ runId, threadId, stream: fromChunks([started(runId)], state) }).done
    expect(record).toMatchObject({ status: 'failed', error: { code: 'run-log-unavailable' } })
    expect(state.finished).toBeUndefined()
    expect(errors.some((m) => m.includes('resolving the run log failed'))).toBe(true)
  })
})

/** Resolves once the log holds `count` entries, by tailing it (no clock). */
async function waitForStored(log: Pick<StreamDurability, 'read'>, count: number): Promise<void> {
  let seen = 0
  const stop = new AbortController()
  for await (const _entry of log.read('-1', stop.signal)) {
    seen += 1
    if (seen >= count) {
      stop.abort()
      return
    }
  }
}
