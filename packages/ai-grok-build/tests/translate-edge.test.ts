/**
 * The translator on hand-written ACP messages: what recordings of the fake do
 * not cover (unknown kinds, junk values, reordered or repeated updates,
 * message ids, notices, cancellation, exit codes).
 */
import { describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { createRunScopedIdGen } from '@tanstack/ai-sandbox'
import { createGrokBuildTranslator, GROK_BUILD_NOTICE_EVENT, GROK_BUILD_SESSION_EVENT, type GrokAcpTranscriptEntry } from '../src/index.js'

const make = () => createGrokBuildTranslator({ runId: 'run-1', threadId: 'thread-1', genId: createRunScopedIdGen('run-1') })
const types = (chunks: StreamChunk[]) => chunks.map((c) => c.type)
const agent = (message: Record<string, unknown>): GrokAcpTranscriptEntry => ({ from: 'agent', message: { jsonrpc: '2.0', ...message } })
const client = (message: Record<string, unknown>): GrokAcpTranscriptEntry => ({ from: 'client', message: { jsonrpc: '2.0', ...message } })
const update = (u: Record<string, unknown>) => agent({ method: 'session/update', params: { sessionId: 's-1', update: u } })
const say = (text: string, messageId?: string) => update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text }, ...(messageId ? { messageId } : {}) })

/** A translator past session/new and with session/prompt (id 2) pending. */
function prompted() {
  const t = make()
  t.push(client({ id: 1, method: 'session/new', params: { cwd: '/w', mcpServers: [] } }))
  t.push(agent({ id: 1, result: { sessionId: 's-1' } }))
  t.push(client({ id: 2, method: 'session/prompt', params: { sessionId: 's-1', prompt: [] } }))
  return t
}

describe('translator edge cases', () => {
  it('reports the session once', () => {
    const t = make()
    t.push(client({ id: 1, method: 'session/new', params: {} }))
    expect(t.push(agent({ id: 1, result: { sessionId: 's-1' } }))).toEqual([{ type: 'CUSTOM', name: GROK_BUILD_SESSION_EVENT, value: { sessionId: 's-1' } }])
    expect(t.push(say('hi'))).not.toContainEqual(expect.objectContaining({ name: GROK_BUILD_SESSION_EVENT }))
    expect(t.sessionId).toBe('s-1')
  })

  it('ignores junk values and messages it does not know, and never throws', () => {
    const t = prompted()
    for (const junk of [null, 1, 'x', [], {}, { from: 'agent' }, { from: 'nobody', message: {} }, agent({ method: 'fs/read_text_file', id: 9, params: {} }), agent({ id: 77, result: {} }), update({ sessionUpdate: 'available_commands_update' }), update({ sessionUpdate: 'mystery' }), update({ sessionUpdate: 'agent_message_chunk', content: { type: 'image' } }), update({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 42 } }), update({ sessionUpdate: 'tool_call' }), agent({ method: 'session/update', params: { update: null } })]) {
      expect(() => t.push(junk as never)).not.toThrow()
      expect(t.push(junk as never), JSON.stringify(junk)).toEqual([])
    }
  })

  it('starts a new text message when the agent changes messageId, and closes text before reasoning', () => {
    const t = prompted()
    expect(types(t.push(say('a', 'm1')))).toEqual(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT'])
    expect(types(t.push(say('b', 'm1')))).toEqual(['TEXT_MESSAGE_CONTENT'])
    expect(types(t.push(say('c', 'm2')))).toEqual(['TEXT_MESSAGE_END', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT'])
    expect(types(t.push(update({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: 'hmm' } })))).toEqual(['TEXT_MESSAGE_END', 'REASONING_START', 'REASONING_MESSAGE_START', 'REASONING_MESSAGE_CONTENT'])
    expect(types(t.push(agent({ id: 2, result: { stopReason: 'end_turn' } })))).toEqual(['REASONING_MESSAGE_END', 'REASONING_END', 'RUN_FINISHED'])
  })

  it('starts a tool call first seen in an update or a permission request, reports its input once, and ends it once', () => {
    const t = prompted()
    expect(types(t.push(agent({ id: 0, method: 'session/request_permission', params: { sessionId: 's-1', toolCall: { toolCallId: 'c1', title: 'Run ls', kind: 'execute', rawInput: { command: 'ls' } }, options: [{ optionId: 'y', kind: 'allow_once', name: 'Yes' }] } })))).toEqual(['TOOL_CALL_START', 'TOOL_CALL_ARGS'])
    expect(t.push(client({ id: 0, result: { outcome: { outcome: 'selected', optionId: 'y' } } }))).toMatchObject([{ type: 'CUSTOM', value: { toolCallId: 'c1', decision: 'allow' } }])
    expect(t.push(update({ sessionUpdate: 'tool_call_update', toolCallId: 'c1', rawInput: { command: 'other' }, status: 'in_progress' }))).toEqual([])
    expect(t.push(update({ sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', rawOutput: { exitCode: 0 } }))).toEqual([
      { type: 'TOOL_CALL_END', toolCallId: 'c1', input: { command: 'ls' }, metadata: { status: 'completed' } },
      { type: 'TOOL_CALL_RESULT', messageId: 'run-1-0', toolCallId: 'c1', content: '{"exitCode":0}', role: 'tool' },
    ])
    expect(t.push(update({ sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'failed' })), 'a repeated end adds nothing').toEqual([])
    expect(types(t.push(update({ sessionUpdate: 'tool_call_update', toolCallId: 'c2', title: 'late', status: 'failed' })))).toEqual(['TOOL_CALL_START', 'TOOL_CALL_END', 'TOOL_CALL_RESULT'])
  })

  it('reports a cancelled permission answer and an answer to an unknown request not at all', () => {
    const t = prompted()
    t.push(agent({ id: 5, method: 'session/request_permission', params: { toolCall: { toolCallId: 'c1', kind: 'edit' }, options: [] } }))
    expect(t.push(client({ id: 6, result: { outcome: { outcome: 'cancelled' } } }))).toEqual([])
    expect(t.push(client({ id: 5, result: { outcome: { outcome: 'cancelled' } } }))).toMatchObject([{ value: { decision: 'cancelled' } }])
  })

  it('does not confuse the agent\'s request ids with the client\'s', () => {
    const t = prompted()
    // The agent's request 2 is not the client's session/prompt 2.
    t.push(agent({ id: 2, method: 'session/request_permission', params: { toolCall: { toolCallId: 'c1' }, options: [] } }))
    expect(t.closed).toBe(false)
    expect(types(t.push(agent({ id: 2, result: { stopReason: 'end_turn' } })))).toEqual(['TOOL_CALL_END', 'RUN_FINISHED'])
  })

  it('maps stop reasons, usage without counts, and a cancelled turn', () => {
    const finish = (result: unknown) => prompted().push(agent({ id: 2, result })).at(-1)
    expect(finish({ stopReason: 'max_tokens' })).toMatchObject({ type: 'RUN_FINISHED', finishReason: 'length' })
    expect(finish({ stopReason: 'max_tokens' }), 'usage the agent never reported is left out, not zeros').not.toHaveProperty('usage')
    expect(finish({ stopReason: 'end_turn', usage: null })).not.toHaveProperty('usage')
    expect(finish({ stopReason: 'end_turn', usage: {} })).not.toHaveProperty('usage')
    expect(finish({ stopReason: 'max_turn_requests' })).toMatchObject({ finishReason: 'length' })
    expect(finish({ stopReason: 'refusal' })).toMatchObject({ finishReason: 'content_filter' })
    expect(finish({ stopReason: 'cancelled' })).toMatchObject({ type: 'RUN_ERROR', code: 'cancelled' })
    const t = prompted()
    t.push(update({ sessionUpdate: 'usage_update', used: 1, size: 2, cost: { amount: 3, currency: 'EUR' } }))
    expect(t.push(agent({ id: 2, result: { stopReason: 'end_turn' } })).at(-1)).not.toHaveProperty('usage.cost')
  })

  it('leaves usage out even when a usage_update gave a cost, and keeps zeros the agent did report', () => {
    const t = prompted()
    t.push(update({ sessionUpdate: 'usage_update', used: 1, size: 2, cost: { amount: 0.5, currency: 'USD' } }))
    expect(t.push(agent({ id: 2, result: { stopReason: 'end_turn' } })).at(-1)).not.toHaveProperty('usage')
    const zero = prompted().push(agent({ id: 2, result: { stopReason: 'end_turn', usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } } })).at(-1)
    expect(zero).toMatchObject({ usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } })
  })

  it("maps ACP usage as core's TokenUsage: inputTokens is the whole input, the cache counts split it, thought tokens are the reasoning detail", () => {
    const usage = { inputTokens: 500, outputTokens: 60, totalTokens: 560, cachedReadTokens: 400, cachedWriteTokens: 50, thoughtTokens: 20 }
    expect(prompted().push(agent({ id: 2, result: { stopReason: 'end_turn', usage } })).at(-1)).toEqual({
      type: 'RUN_FINISHED',
      runId: 'run-1',
      threadId: 'thread-1',
      finishReason: 'stop',
      usage: { promptTokens: 500, completionTokens: 60, totalTokens: 560, promptTokensDetails: { cachedTokens: 400, cacheWriteTokens: 50 }, completionTokensDetails: { reasoningTokens: 20 } },
    })
  })

  it("reports a bridged tool by the app's name whether the agent names it mcp__tanstack__<tool> or only titles it 'tanstack: <tool>'; other tools keep theirs", () => {
    const start = (call: Record<string, unknown>) => prompted().push(update({ sessionUpdate: 'tool_call', toolCallId: 'c1', status: 'pending', ...call }))[0]
    expect(start({ name: 'mcp__tanstack__get_weather', title: 'get_weather', kind: 'other' })).toEqual({
      type: 'TOOL_CALL_START',
      toolCallId: 'c1',
      toolCallName: 'get_weather',
      toolName: 'get_weather',
      metadata: { providerExecuted: true, harness: 'grok-build', kind: 'other', title: 'get_weather', cliToolName: 'mcp__tanstack__get_weather' },
    })
    expect(start({ title: 'tanstack: lookup_order', kind: 'other' })).toMatchObject({ toolCallName: 'lookup_order', toolName: 'lookup_order', metadata: { cliToolName: 'tanstack: lookup_order' } })
    expect(start({ name: 'get_weather', title: 'tanstack: get_weather', kind: 'other' }), 'already the app name').toMatchObject({ toolCallName: 'get_weather', metadata: { title: 'tanstack: get_weather' } })
    expect(start({ name: 'get_weather', title: 'tanstack: get_weather', kind: 'other' })).not.toHaveProperty('metadata.cliToolName')
    for (const call of [{ title: 'cat notes.txt', kind: 'execute' }, { name: 'mcp__issues__lookup_issue', kind: 'other' }, { title: 'tanstack: build the docs and deploy', kind: 'execute' }]) {
      const chunk = start(call) as { toolCallName: string; metadata: object }
      expect(chunk.toolCallName, JSON.stringify(call)).toBe('name' in call ? call.name : call.title)
      expect(chunk.metadata).not.toHaveProperty('cliToolName')
    }
  })

  it('emits plans and notices as CUSTOM chunks', () => {
    const t = prompted()
    expect(t.push(update({ sessionUpdate: 'notice', severity: 'warning', title: 'Rate limited', description: 'slowing down' }))).toEqual([{ type: 'CUSTOM', name: GROK_BUILD_NOTICE_EVENT, value: { severity: 'warning', title: 'Rate limited', description: 'slowing down' } }])
  })

  it('drops updates while a session loads, and reports the loaded session id on success', () => {
    const t = make()
    t.push(client({ id: 1, method: 'session/load', params: { sessionId: 'old', cwd: '/w', mcpServers: [] } }))
    expect(t.push(say('replayed history'))).toEqual([])
    expect(t.push(agent({ id: 1, result: null }))).toEqual([{ type: 'CUSTOM', name: GROK_BUILD_SESSION_EVENT, value: { sessionId: 'old' } }])
    t.push(client({ id: 2, method: 'session/prompt', params: { sessionId: 'old' } }))
    expect(types(t.push(say('new')))).toEqual(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT'])
  })

  it('a load of an unknown session (-32002) is RUN_ERROR session_not_found naming the session and the way out', () => {
    const t = make()
    t.push(client({ id: 1, method: 'session/load', params: { sessionId: 'gone' } }))
    const message = 'Grok Build could not resume session "gone": session/load failed: Resource not found. The session is gone (the agent keeps sessions under its HOME inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions.'
    expect(t.push(agent({ id: 1, error: { code: -32002, message: 'Resource not found', data: { sessionId: 'gone' } } }))).toEqual([
      { type: 'RUN_ERROR', runId: 'run-1', threadId: 'thread-1', message, code: 'session_not_found', error: { message, code: 'session_not_found' } },
    ])
    expect(t.closed).toBe(true)
    expect(t.push(say('late'))).toEqual([])
    expect(t.finish({ exitCode: 0, stderrTail: '' })).toEqual([])
  })

  it('session/resume of an unknown session is session_not_found too; other failed loads keep acp_error_<code>', () => {
    const resumed = make()
    resumed.push(client({ id: 1, method: 'session/resume', params: { sessionId: 'gone' } }))
    expect(resumed.push(agent({ id: 1, error: { code: -32002, message: 'Resource not found' } }))[0]).toMatchObject({ code: 'session_not_found' })
    const failed = make()
    failed.push(client({ id: 1, method: 'session/load', params: { sessionId: 'old' } }))
    expect(failed.push(agent({ id: 1, error: { code: -32603, message: 'Internal error' } }))[0]).toMatchObject({ code: 'acp_error_-32603', message: 'Grok Build: session/load failed: Internal error.' })
    const prompt = make()
    prompt.push(client({ id: 1, method: 'session/prompt', params: { sessionId: 's' } }))
    expect(prompt.push(agent({ id: 1, error: { code: -32002, message: 'Resource not found' } }))[0], '-32002 elsewhere is not about the session').toMatchObject({ code: 'acp_error_-32002' })
  })

  it('maps exit 127 and the shell saying "not found" to the install hint; other exits to their code', () => {
    expect(make().finish({ exitCode: 127, stderrTail: 'sh: 1: exec: grok: not found\n' })[0]).toMatchObject({ code: 'cli_not_found', message: expect.stringContaining('$HOME/.grok/bin/grok') })
    expect(make().finish({ exitCode: 2, stderrTail: 'sh: 1: exec: /opt/grok: Permission denied' })[0]).toMatchObject({ code: 'cli_not_found' })
    expect(make().finish({ exitCode: 3, stderrTail: '' })[0]).toMatchObject({ code: 'cli_exit', message: 'Grok Build exited with code 3 before the turn ended. It wrote nothing to stderr.' })
    expect(() => make().finish({ exitCode: 1, stderrTail: null as never })).not.toThrow()
  })
})
