/**
 * Tool history through chat() + withSandbox (local-process): a harness-like
 * adapter streams provider-executed TOOL_CALL_* chunks the way the Claude
 * Code translator does. chat() alone leaves them out of the transcript; with
 * withSandbox the finished run's messages hold them, marked, and restore as
 * tool cards, and the next run on the thread sends the model the
 * conversation without them while its transcript keeps them.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { chat, defineChatMiddleware, modelMessagesToUIMessages, type ModelMessage, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import { defineSandbox, isSandboxToolCall, provideSandbox, SandboxCapability, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('tool-history')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

const harness = { providerExecuted: true, harness: 'test-harness' }

/**
 * An adapter that, like a harness, ran a tool itself: it streams the call
 * (START with provider-executed metadata, ARGS, END, RESULT) and then text.
 * It records the messages each request carried.
 */
function harnessAdapter(seen: ModelMessage[][]): TextAdapter<any, any, any, any> {
  let turn = 0
  return {
    kind: 'text',
    name: 'test-harness',
    model: 'test',
    requires: [SandboxCapability],
    '~types': undefined as never,
    async *chatStream(options: any) {
      seen.push(structuredClone(options.messages))
      turn++
      const { runId = `r${turn}`, threadId } = options
      const id = `toolu_${turn}`
      const c = (value: Record<string, unknown>) => ({ timestamp: Date.now(), ...value }) as unknown as StreamChunk
      yield c({ type: 'RUN_STARTED', runId, threadId })
      yield c({ type: 'TOOL_CALL_START', toolCallId: id, toolCallName: 'Bash', toolName: 'Bash', metadata: harness })
      yield c({ type: 'TOOL_CALL_ARGS', toolCallId: id, delta: `{"command":"ls run${turn}"}` })
      yield c({ type: 'TOOL_CALL_END', toolCallId: id, input: { command: `ls run${turn}` } })
      yield c({ type: 'TOOL_CALL_RESULT', toolCallId: id, messageId: `${id}-result`, content: `listing ${turn}`, role: 'tool' })
      yield c({ type: 'TEXT_MESSAGE_START', messageId: `text-${turn}`, role: 'assistant' })
      yield c({ type: 'TEXT_MESSAGE_CONTENT', messageId: `text-${turn}`, delta: `answer ${turn}` })
      yield c({ type: 'TEXT_MESSAGE_END', messageId: `text-${turn}` })
      yield c({ type: 'RUN_FINISHED', runId, threadId, finishReason: 'stop' })
    },
    async structuredOutput() {
      throw new TypeError('not used')
    },
  } as TextAdapter<any, any, any, any>
}

/** Run chat() and return the stream and the transcript a persistence middleware would save (ctx.messages at onFinish). */
async function run(adapter: TextAdapter<any, any, any, any>, messages: ModelMessage[], middleware: any[]): Promise<{ chunks: StreamChunk[]; transcript: ModelMessage[] }> {
  let transcript: ModelMessage[] = []
  const persist = defineChatMiddleware({ name: 'persist', onFinish: (ctx) => void (transcript = [...ctx.messages]) })
  const chunks: StreamChunk[] = []
  for await (const chunk of chat({ adapter, threadId: 't-history', messages, middleware: [persist, ...middleware] } as any) as AsyncIterable<StreamChunk>) chunks.push(chunk)
  return { chunks, transcript }
}

describe('tool history of sandboxed runs', () => {
  it('chat() alone drops provider-executed tool calls from the transcript (what withSandbox adds)', async () => {
    const seen: ModelMessage[][] = []
    const adapter = harnessAdapter(seen)
    // Satisfies the adapter's sandbox requirement without withSandbox (the adapter never reads it).
    const passThrough = defineChatMiddleware({ name: 'fake-sandbox', provides: [SandboxCapability], setup: (ctx) => void provideSandbox(ctx, {} as never) })
    const { transcript } = await run(adapter, [{ role: 'user', content: 'list' }], [passThrough])
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant'])
    expect(transcript[1]!.toolCalls).toBeUndefined()
  })

  it('records the calls into the transcript, restores them as tool cards, and keeps them out of the next model request', async () => {
    const sandbox = defineSandbox({ id: 'history', provider, fileEvents: false })
    const seen: ModelMessage[][] = []
    const adapter = harnessAdapter(seen)

    const first = await run(adapter, [{ role: 'user', content: 'list the files' }], [withSandbox(sandbox)])
    expect(first.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant'])
    const [, calls, result, text] = first.transcript
    expect(calls!.toolCalls).toEqual([{ id: 'toolu_1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls run1"}' }, metadata: { ...harness, sandboxObserved: true } }])
    expect(calls!.toolCalls!.every(isSandboxToolCall)).toBe(true)
    expect(result).toMatchObject({ role: 'tool', toolCallId: 'toolu_1', content: 'listing 1', metadata: { sandboxObserved: true } })
    expect(text).toMatchObject({ role: 'assistant', content: 'answer 1' })
    const start = (first.chunks as any[]).find((c) => c.type === 'TOOL_CALL_START')
    expect(isSandboxToolCall(start), 'the live chunk is marked too, so a client-held transcript is').toBe(true)

    // Reloaded from the saved transcript, the run shows its tool card with the result.
    const ui = modelMessagesToUIMessages(first.transcript)
    const card = ui.flatMap((m) => m.parts).find((p) => p.type === 'tool-call') as any
    expect(card).toMatchObject({ id: 'toolu_1', name: 'Bash', arguments: '{"command":"ls run1"}', state: 'complete', output: 'listing 1' })
    expect(isSandboxToolCall(card)).toBe(true)

    const second = await run(adapter, [...first.transcript, { role: 'user', content: 'and again' }], [withSandbox(sandbox)])
    // The model request of run 2 carries the conversation without the harness's tool calls.
    expect(seen[1]!.map((m) => `${m.role}:${typeof m.content === 'string' ? m.content : JSON.stringify(m.content)}`)).toEqual(['user:list the files', 'assistant:answer 1', 'user:and again'])
    expect(seen[1]!.some((m) => m.role === 'tool' || m.toolCalls)).toBe(false)
    // The transcript keeps both runs' calls.
    expect(second.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'tool', 'assistant'])
    expect(second.transcript.flatMap((m) => m.toolCalls ?? []).map((c) => c.id)).toEqual(['toolu_1', 'toolu_2'])
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-history', runId: '' }) })
  })
})
