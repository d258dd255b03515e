/**
 * The stored tool-history marker through chat() + withSandbox (local-process):
 * a finished run's transcript carries spec 002's `{ sandboxObserved: true }`,
 * and a transcript stored by another implementation (that marker) or by an
 * earlier version of this package (`sandboxToolCall: true`) is recognised:
 * its sandbox calls are kept out of the next model request.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { chat, defineChatMiddleware, type ModelMessage, type StreamChunk, type TextAdapter } from '@tanstack/ai'
import { defineSandbox, isSandboxToolCall, SandboxCapability, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('tool-marker')
const sandbox = defineSandbox({ id: 'tool-marker', provider: localProcessSandbox({ root: tmp.root }), fileEvents: false, lifecycle: { reuse: 'none' } })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left).toEqual([])
})

/** A harness-like adapter: one provider-executed Bash call, then text. Records each request's messages. */
function harnessAdapter(seen: ModelMessage[][]): TextAdapter<any, any, any, any> {
  return {
    kind: 'text',
    name: 'marker-harness',
    model: 'test',
    requires: [SandboxCapability],
    '~types': undefined as never,
    async *chatStream(options: any) {
      seen.push(structuredClone(options.messages))
      const { runId = 'r', threadId } = options
      const c = (value: Record<string, unknown>) => ({ timestamp: Date.now(), ...value }) as unknown as StreamChunk
      yield c({ type: 'RUN_STARTED', runId, threadId })
      yield c({ type: 'TOOL_CALL_START', toolCallId: 'toolu_new', toolCallName: 'Bash', toolName: 'Bash', metadata: { providerExecuted: true } })
      yield c({ type: 'TOOL_CALL_END', toolCallId: 'toolu_new', input: { command: 'ls' } })
      yield c({ type: 'TOOL_CALL_RESULT', toolCallId: 'toolu_new', messageId: 'toolu_new-result', content: 'a.txt', role: 'tool' })
      yield c({ type: 'TEXT_MESSAGE_START', messageId: 'text', role: 'assistant' })
      yield c({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'text', delta: 'done' })
      yield c({ type: 'TEXT_MESSAGE_END', messageId: 'text' })
      yield c({ type: 'RUN_FINISHED', runId, threadId, finishReason: 'stop' })
    },
    async structuredOutput() {
      throw new TypeError('not used')
    },
  } as TextAdapter<any, any, any, any>
}

async function run(messages: ModelMessage[]): Promise<{ seen: ModelMessage[][]; transcript: ModelMessage[] }> {
  const seen: ModelMessage[][] = []
  let transcript: ModelMessage[] = []
  const persist = defineChatMiddleware({ name: 'persist', onFinish: (ctx) => void (transcript = [...ctx.messages]) })
  for await (const _ of chat({ adapter: harnessAdapter(seen), threadId: 't-marker', messages, middleware: [persist, withSandbox(sandbox)] } as any) as AsyncIterable<StreamChunk>) void _
  return { seen, transcript }
}

/** A transcript with one sandbox call stored under `marker`. */
function storedWith(marker: Record<string, true>): ModelMessage[] {
  return [
    { role: 'user', content: 'list' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'toolu_old', type: 'function', function: { name: 'Bash', arguments: '{}' }, metadata: { providerExecuted: true, ...marker } }], metadata: marker },
    { role: 'tool', content: 'old listing', toolCallId: 'toolu_old', metadata: marker },
    { role: 'assistant', content: 'earlier answer' },
    { role: 'user', content: 'again' },
  ]
}

describe('the stored tool-history marker', () => {
  it('is { sandboxObserved: true } in toolCalls[].metadata, on the call message and on the tool result', async () => {
    const { transcript } = await run([{ role: 'user', content: 'list' }])
    const calls = transcript.find((m) => m.toolCalls?.length)!
    expect(calls.toolCalls![0]!.metadata).toEqual({ providerExecuted: true, sandboxObserved: true })
    expect(calls.metadata).toEqual({ sandboxObserved: true })
    expect(transcript.find((m) => m.role === 'tool')?.metadata).toEqual({ sandboxObserved: true })
    expect(JSON.stringify(transcript)).not.toContain('sandboxToolCall')
  })

  for (const [who, marker] of [
    ['another implementation of spec 002', { sandboxObserved: true }],
    ['an earlier version of this package', { sandboxToolCall: true }],
  ] as const) {
    it(`recognises a transcript stored by ${who} and keeps its sandbox calls out of the model request`, async () => {
      const stored = storedWith(marker)
      expect(isSandboxToolCall(stored[1]!.toolCalls![0])).toBe(true)
      const { seen, transcript } = await run(stored)
      expect(seen[0]!.map((m) => m.content), 'the model got the conversation without the stored sandbox call').toEqual(['list', 'earlier answer', 'again'])
      expect(transcript.some((m) => m.toolCalls?.some((c) => c.id === 'toolu_old')), 'the transcript keeps it').toBe(true)
    })
  }
})
