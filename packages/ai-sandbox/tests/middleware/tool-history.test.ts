/**
 * Tool history, pure parts: recording provider-executed TOOL_CALL_* chunks
 * into marked transcript messages, recognising them, and stripping them from
 * the model request. The chat() round trip is in testing/sandbox-e2e.
 */
import type { ModelMessage, StreamChunk } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { isSandboxToolCall, SANDBOX_TOOL_CALL_KEY } from '../../src/index.js'
import { createToolHistory, withoutSandboxToolCalls } from '../../src/middleware/tool-history.js'

const c = (value: Record<string, unknown>) => value as unknown as StreamChunk
const harness = { providerExecuted: true, harness: 'claude-code' }

describe('createToolHistory', () => {
  it('records provider-executed calls with their arguments and results, marked', () => {
    const history = createToolHistory()
    const start = history.observe(c({ type: 'TOOL_CALL_START', toolCallId: 't1', toolCallName: 'Bash', metadata: harness }))
    expect((start as { metadata?: unknown }).metadata, 'the live chunk carries the marker too').toEqual({ ...harness, [SANDBOX_TOOL_CALL_KEY]: true })
    history.observe(c({ type: 'TOOL_CALL_ARGS', toolCallId: 't1', delta: '{"command":' }))
    history.observe(c({ type: 'TOOL_CALL_ARGS', toolCallId: 't1', delta: '"ls"}' }))
    history.observe(c({ type: 'TOOL_CALL_END', toolCallId: 't1' }))
    history.observe(c({ type: 'TOOL_CALL_RESULT', toolCallId: 't1', content: 'a.txt\n' }))
    history.observe(c({ type: 'TOOL_CALL_START', toolCallId: 't2', toolName: 'Write', metadata: harness }))
    history.observe(c({ type: 'TOOL_CALL_END', toolCallId: 't2', input: { file_path: 'n.txt' } }))

    let n = 0
    const messages = history.take((prefix) => `${prefix}-${++n}`)
    expect(messages).toEqual([
      {
        role: 'assistant',
        content: null,
        id: 'msg-1',
        createdAt: expect.any(Date),
        metadata: { [SANDBOX_TOOL_CALL_KEY]: true },
        toolCalls: [
          { id: 't1', type: 'function', function: { name: 'Bash', arguments: '{"command":"ls"}' }, metadata: { ...harness, [SANDBOX_TOOL_CALL_KEY]: true } },
          { id: 't2', type: 'function', function: { name: 'Write', arguments: '{"file_path":"n.txt"}' }, metadata: { ...harness, [SANDBOX_TOOL_CALL_KEY]: true } },
        ],
      },
      { role: 'tool', content: 'a.txt\n', toolCallId: 't1', name: 'Bash', metadata: { [SANDBOX_TOOL_CALL_KEY]: true } },
    ])
    expect(history.take(() => 'x'), 'take() empties the record').toEqual([])
  })

  it('leaves calls the agent loop runs (not provider-executed) alone', () => {
    const history = createToolHistory()
    const chunk = c({ type: 'TOOL_CALL_START', toolCallId: 't1', toolCallName: 'getWeather' })
    expect(history.observe(chunk)).toBe(chunk)
    history.observe(c({ type: 'TOOL_CALL_RESULT', toolCallId: 't1', content: 'sunny' }))
    expect(history.take(() => 'x')).toEqual([])
  })
})

describe('the stored marker', () => {
  it("is spec 002's literal { sandboxObserved: true } (renaming it is a data change)", () => {
    expect(SANDBOX_TOOL_CALL_KEY).toBe('sandboxObserved')
    const history = createToolHistory()
    history.observe(c({ type: 'TOOL_CALL_START', toolCallId: 't1', toolCallName: 'Bash', metadata: { providerExecuted: true } }))
    history.observe(c({ type: 'TOOL_CALL_RESULT', toolCallId: 't1', content: 'ok' }))
    const [assistant, tool] = history.take(() => 'm')
    expect(assistant!.metadata).toEqual({ sandboxObserved: true })
    expect(assistant!.toolCalls![0]!.metadata).toEqual({ providerExecuted: true, sandboxObserved: true })
    expect(tool!.metadata).toEqual({ sandboxObserved: true })
    expect(JSON.stringify([assistant, tool]), 'the key of earlier versions is no longer written').not.toContain('sandboxToolCall')
  })
})

describe('isSandboxToolCall', () => {
  it('recognises the marker another implementation of spec 002 stored', () => {
    expect(isSandboxToolCall({ metadata: { sandboxObserved: true } })).toBe(true)
    expect(isSandboxToolCall({ metadata: { sandboxObserved: 'yes' } }), 'only the value true').toBe(false)
  })

  it('still recognises the key earlier versions of this package stored (sandboxToolCall)', () => {
    expect(isSandboxToolCall({ metadata: { sandboxToolCall: true } })).toBe(true)
    const stored: ModelMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'old', type: 'function', function: { name: 'Bash', arguments: '{}' }, metadata: { sandboxToolCall: true } }], metadata: { sandboxToolCall: true } },
      { role: 'tool', content: 'out', toolCallId: 'old', metadata: { sandboxToolCall: true } },
    ]
    expect(withoutSandboxToolCalls(stored), 'an old transcript is still kept out of the model request').toEqual([{ role: 'user', content: 'go' }])
  })

  it('is true only for marked calls', () => {
    expect(isSandboxToolCall({ metadata: { [SANDBOX_TOOL_CALL_KEY]: true } })).toBe(true)
    expect(isSandboxToolCall({ metadata: { providerExecuted: true } }), 'a provider server tool (web_search) is not a sandbox call').toBe(false)
    expect(isSandboxToolCall({})).toBe(false)
    expect(isSandboxToolCall(undefined)).toBe(false)
  })
})

describe('withoutSandboxToolCalls', () => {
  const marked = { [SANDBOX_TOOL_CALL_KEY]: true }
  const call = (id: string, metadata?: Record<string, unknown>) => ({ id, type: 'function' as const, function: { name: 'x', arguments: '{}' }, ...(metadata ? { metadata } : {}) })

  it('drops marked calls, their results and assistant messages left empty; keeps the rest', () => {
    const messages: ModelMessage[] = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: null, toolCalls: [call('s1', marked)], metadata: marked },
      { role: 'tool', content: 'out', toolCallId: 's1' },
      { role: 'assistant', content: 'done', toolCalls: [call('s2', marked), call('own')] },
      { role: 'tool', content: 'own result', toolCallId: 'own' },
      { role: 'tool', content: 'orphan', toolCallId: 's3', metadata: marked },
      { role: 'assistant', content: 'text only', toolCalls: [call('s4', marked)] },
    ]
    expect(withoutSandboxToolCalls(messages)).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'done', toolCalls: [call('own')] },
      { role: 'tool', content: 'own result', toolCallId: 'own' },
      { role: 'assistant', content: 'text only' },
    ])
  })

  it('returns undefined when nothing is marked', () => {
    expect(withoutSandboxToolCalls([{ role: 'user', content: 'hi' }, { role: 'assistant', content: null, toolCalls: [call('a', { providerExecuted: true })] }])).toBeUndefined()
  })
})
