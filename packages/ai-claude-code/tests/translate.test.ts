/**
 * The translator on real CLI output: every recorded version folder must keep
 * producing the same chunk shapes (so format drift in a new CLI version shows
 * as a failing replay), deterministically, however the bytes are split into
 * chunks, with very long lines and noise lines mixed in.
 */
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { TOOL_BRIDGE_UNAVAILABLE_EVENT, createRunScopedIdGen } from '@tanstack/ai-sandbox'
import { CLAUDE_CODE_SESSION_EVENT, CLAUDE_CODE_INIT_EVENT, CLAUDE_CODE_PERMISSION_DENIALS_EVENT, createClaudeCodeTranslator, translateClaudeCodeLines } from '../src/index.js'
import { BIG_TEXT, collapse, expectReplayAtEverySplit, expectReplayAtRandomCuts, expectReplayAtSplits, linesOf, multiByteStarts, piecesOf, reasoningMessage, seededRandom, textMessage, toolResult, withNoise } from '@testing/support/harness-recordings'
import { cliVersions, recording, replay, resultOf, sessionOf, translate } from './helpers/recordings.js'

const versions = cliVersions()
const META = { providerExecuted: true, harness: 'claude-code' }
const run = { runId: 'run-1', threadId: 'thread-1' }
const started = { type: 'RUN_STARTED', ...run }
const session = (bytes: Buffer) => ({ type: 'CUSTOM', name: CLAUDE_CODE_SESSION_EVENT, value: { sessionId: sessionOf(bytes) } })
const init = (bytes: Buffer) => {
  const line = linesOf(bytes).find((l) => (l as { subtype?: string }).subtype === 'init') as { model?: string; tools?: string[]; mcp_servers?: { name: string; status: string }[]; permissionMode?: string }
  return { type: 'CUSTOM', name: CLAUDE_CODE_INIT_EVENT, value: { model: line.model, tools: line.tools ?? [], mcpServers: (line.mcp_servers ?? []).map((m) => ({ name: m.name, status: m.status })), permissionMode: line.permissionMode } }
}
const tool = (toolCallId: string, name: string, input: unknown) => [
  { type: 'TOOL_CALL_START', toolCallId, toolCallName: name, toolName: name, metadata: META },
  { type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(input) },
  { type: 'TOOL_CALL_END', toolCallId, input },
]
const finished = (bytes: Buffer, promptTokens: number, completionTokens: number) => ({
  type: 'RUN_FINISHED',
  ...run,
  finishReason: 'stop',
  model: 'sonnet',
  usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cost: resultOf(bytes).total_cost_usd },
})

it('has recordings to replay', () => {
  expect(versions.length).toBeGreaterThan(0)
  for (const version of versions) expect(version).toMatch(/^\d+\.\d+\.\d+$/)
})

describe.each(versions)('claude %s recordings', (version) => {
  const load = (scenario: string) => recording(version, scenario)

  it('text: session id right after RUN_STARTED, the streamed text once, RUN_FINISHED with usage', () => {
    const bytes = load('text')
    const chunks = translate(linesOf(bytes))
    expect(collapse(chunks)).toEqual([started, session(bytes), init(bytes), ...textMessage('run-1-0', 'Hello from the fake model. This reply is long enough to arrive in several streamed deltas.'), finished(bytes, 21, 17)])
    expect(chunks.filter((c) => c.type === 'TEXT_MESSAGE_CONTENT').length, 'the text arrived as several deltas').toBeGreaterThan(1)
  })

  it('tools: Write, Edit and Read calls with parsed arguments, their results, and the text between', () => {
    const bytes = load('tools')
    const chunks = collapse(translate(linesOf(bytes)))
    expect(chunks).toEqual([
      started,
      session(bytes), init(bytes),
      ...tool('toolu_e2e_1_write', 'Write', { file_path: 'notes.txt', content: 'first draft\nsecond line "quoted" $HOME\n' }),
      toolResult('run-1-0', 'toolu_e2e_1_write', expect.stringMatching(/^File created successfully at: notes\.txt/)),
      ...textMessage('run-1-1', 'Created it; now the edit.'),
      ...tool('toolu_e2e_2_edit', 'Edit', { file_path: 'notes.txt', old_string: 'first draft', new_string: 'final draft' }),
      toolResult('run-1-2', 'toolu_e2e_2_edit', expect.stringMatching(/^The file notes\.txt has been updated successfully/)),
      ...tool('toolu_e2e_3_read', 'Read', { file_path: 'notes.txt' }),
      toolResult('run-1-3', 'toolu_e2e_3_read', '1\tfinal draft\n2\tsecond line "quoted" $HOME\n3\t'),
      ...textMessage('run-1-4', 'notes.txt now says final draft.'),
      finished(bytes, 30 + 40 + 52 + 64, 11 + 12 + 8 + 9),
    ])
  })

  it('resume: the resumed run reports the first run\'s session and only the new answer', () => {
    const first = load('resume-first-turn')
    const bytes = load('resume')
    expect(sessionOf(bytes)).toBe(sessionOf(first))
    expect(collapse(translate(linesOf(bytes)))).toEqual([started, session(bytes), init(bytes), ...textMessage('run-1-0', 'You asked me to remember the word pelican.'), finished(bytes, 33, 10)])
  })

  it('api error: RUN_ERROR with the server\'s message and status, no text from the CLI\'s synthetic message', () => {
    const bytes = load('api-error')
    const message = 'API Error: 400 fixture says: the widget count is invalid'
    expect(translate(linesOf(bytes))).toEqual([started, session(bytes), init(bytes), { type: 'RUN_ERROR', ...run, message, code: 'api_error_400', error: { message, code: 'api_error_400' } }])
  })

  it('resume of an unknown session id: RUN_ERROR session_not_found with the CLI\'s reason, and no session event for the id', () => {
    const bytes = load('resume-unknown')
    const id = sessionOf(bytes)
    const message = `Claude Code could not resume the session: No conversation found with session ID: ${id}. The session is gone (sessions live under $HOME/.claude inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions.`
    expect(translate(linesOf(bytes), { exit: { exitCode: 1, stderrTail: `No conversation found with session ID: ${id}\n` } })).toEqual([started, { type: 'RUN_ERROR', ...run, message, code: 'session_not_found', error: { message, code: 'session_not_found' } }])
  })

  it('resume of a value that is neither a session id nor a title: session_not_found, naming the value', () => {
    const chunks = translate(linesOf(load('resume-unknown-title')), { exit: { exitCode: 1, stderrTail: '' } })
    expect(chunks.map((c) => c.type), 'the fresh session id the CLI reports for the failed run is not announced').toEqual(['RUN_STARTED', 'RUN_ERROR'])
    expect(chunks[1]).toMatchObject({ code: 'session_not_found', message: expect.stringContaining('Provided value "no-such-session" is not a UUID and does not match any session title. The session is gone') })
    expect((chunks[1] as { message: string }).message).not.toContain('--resume requires')
  })

  it('model rejected: RUN_ERROR naming the model', () => {
    const bytes = load('model-rejected')
    const chunks = translate(linesOf(bytes))
    expect(chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'CUSTOM', 'RUN_ERROR'])
    expect(chunks[3]).toMatchObject({ code: 'api_error_404', message: expect.stringContaining('claude-nope-1') })
  })

  it('thinking: a reasoning message, then the text', () => {
    const bytes = load('thinking')
    expect(collapse(translate(linesOf(bytes)))).toEqual([
      started,
      session(bytes), init(bytes),
      ...reasoningMessage('run-1-0', 'Option A is cheaper, option B is faster. Speed matters more here.'),
      ...textMessage('run-1-1', 'Option B is better: it is faster.'),
      finished(bytes, 25, 19),
    ])
  })

  it('without partial messages (no stream_event lines) the complete assistant lines give the same shapes', () => {
    for (const scenario of ['text', 'tools', 'thinking']) {
      const lines = linesOf(load(scenario))
      const unstreamed = lines.filter((line) => (line as { type?: string }).type !== 'stream_event')
      const shape = (chunks: StreamChunk[]) =>
        collapse(chunks).map(({ usage: _usage, finishReason: _finish, ...rest }) => (rest.type === 'TOOL_CALL_ARGS' ? { ...rest, delta: JSON.parse(rest.delta as string) } : rest))
      // The complete messages may add defaulted inputs (Edit's `replace_all: false`), hence toMatchObject.
      expect(shape(translate(unstreamed)), scenario).toMatchObject(shape(translate(lines)))
    }
  })

  it('is deterministic: the same bytes give the same chunks, twice, with run-scoped ids', () => {
    for (const scenario of ['text', 'tools', 'thinking', 'resume', 'api-error']) {
      const lines = linesOf(load(scenario))
      const once = translateClaudeCodeLines(lines, { ...run, genId: createRunScopedIdGen('run-1') })
      const twice = translateClaudeCodeLines(linesOf(load(scenario)), { ...run, genId: createRunScopedIdGen('run-1') })
      expect(twice, scenario).toEqual(once)
    }
  })

  it('the determinism check would catch random ids', () => {
    const lines = linesOf(load('tools'))
    const once = translateClaudeCodeLines(lines, { ...run, genId: () => randomUUID() })
    const twice = translateClaudeCodeLines(lines, { ...run, genId: () => randomUUID() })
    expect(twice).not.toEqual(once)
  })

  describe('through toLines', () => {
    const reference = (scenario: string) => translate(linesOf(load(scenario)))

    it('splits the text recording at every byte position', async () => {
      const bytes = load('text')
      const expected = reference('text')
      await expectReplayAtEverySplit(bytes, expected, replay)
    })

    it('splits inside every multi-byte character of the tools recording', async () => {
      const bytes = load('tools')
      const expected = reference('tools')
      const starts = multiByteStarts(bytes)
      expect(starts.length, 'the recording has multi-byte characters (the em dash in tool results)').toBeGreaterThan(0)
      await expectReplayAtSplits(bytes, starts.flatMap((start) => [start + 1, start + 2]), expected, replay)
    })

    it('splits larger recordings at random positions (seeded)', async () => {
      const random = seededRandom(7)
      for (const scenario of ['tools', 'thinking', 'resume']) {
        const bytes = load(scenario)
        const expected = reference(scenario)
        await expectReplayAtRandomCuts(bytes, expected, replay, { random, trials: 200, label: scenario })
      }
    })

    it('carries a 2 MB text delta on one line intact', async () => {
      const lines = load('text').toString().split('\n')
      const deltaAt = lines.findIndex((line) => line.includes('"text_delta"'))
      const bigLine = JSON.parse(lines[deltaAt]!) as { event: { delta: { text: string } } }
      bigLine.event.delta.text = BIG_TEXT
      const bytes = Buffer.from([...lines.slice(0, deltaAt), JSON.stringify(bigLine), ...lines.slice(deltaAt)].join('\n'))
      expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024)
      const { chunks } = await replay(piecesOf(bytes))
      const deltas = chunks.filter((c) => c.type === 'TEXT_MESSAGE_CONTENT').map((c) => c.delta)
      expect(deltas[0]!.length).toBe(BIG_TEXT.length)
      expect(deltas[0] === BIG_TEXT).toBe(true)
      expect(deltas.join('')).toBe(`${BIG_TEXT}Hello from the fake model. This reply is long enough to arrive in several streamed deltas.`)
      expect(chunks.at(-1)!.type).toBe('RUN_FINISHED')
    })

    it('skips noise: non-JSON lines, blank lines, CRLF endings and JSON that is not a CLI event', async () => {
      const lines = load('tools').toString().split('\n').filter((line) => line !== '')
      const noise = ['npm WARN something odd', '', '   ', '{not json', '\u001b[31mcolored\u001b[0m', '42', 'null', '"a string"', '[1,2]', '{"unrelated":true}']
      const mixed = withNoise(lines, noise)
      const { chunks, nonJson } = await replay([mixed])
      expect(chunks).toEqual(reference('tools'))
      expect(new Set(nonJson)).toEqual(new Set(['npm WARN something odd', '{not json', '\u001b[31mcolored\u001b[0m']))
    })
  })

  it('closes open blocks and reports the exit when the CLI dies before its result line', () => {
    const lines = linesOf(load('text'))
    const deltaAt = lines.findIndex((line) => JSON.stringify(line).includes('"text_delta"'))
    const chunks = translate(lines.slice(0, deltaAt + 1), { exit: { exitCode: 143, signal: 'SIGTERM', stderrTail: '' } })
    expect(chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'CUSTOM', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_ERROR'])
    expect(chunks.at(-1)).toMatchObject({ code: 'cli_exit', message: expect.stringContaining('killed by SIGTERM') })
  })
})

describe('translator edge cases', () => {
  const make = () => createClaudeCodeTranslator({ ...run, genId: createRunScopedIdGen('run-1') })

  it('reports the session once, from the first line that has one', () => {
    const t = make()
    expect(t.push({ type: 'system', subtype: 'init', session_id: 's-1', tools: ['Bash'], mcp_servers: [{ name: 'issues', status: 'connected' }] })).toEqual([
      { type: 'CUSTOM', name: CLAUDE_CODE_SESSION_EVENT, value: { sessionId: 's-1' } },
      { type: 'CUSTOM', name: CLAUDE_CODE_INIT_EVENT, value: { model: undefined, tools: ['Bash'], mcpServers: [{ name: 'issues', status: 'connected' }], permissionMode: undefined } },
    ])
    expect(t.push({ type: 'system', subtype: 'status', session_id: 's-1' })).toEqual([])
    expect(t.sessionId).toBe('s-1')
  })

  it('ignores the lines of a sub-agent (parent_tool_use_id set)', () => {
    const t = make()
    t.push({ type: 'system', session_id: 's-1' })
    expect(t.push({ type: 'assistant', parent_tool_use_id: 'toolu_task', message: { id: 'm-sub', content: [{ type: 'text', text: 'inner' }] } })).toEqual([])
    expect(t.push({ type: 'user', parent_tool_use_id: 'toolu_task', message: { content: [{ type: 'tool_result', tool_use_id: 'x', content: 'inner' }] } })).toEqual([])
  })

  it('stops after the result line and ignores junk values', () => {
    const t = make()
    for (const junk of [null, 1, 'x', [], {}, { type: 'stream_event' }, { type: 'stream_event', event: { type: 'content_block_delta', index: 5, delta: { type: 'text_delta', text: 'orphan' } } }]) expect(t.push(junk)).toEqual([])
    expect(t.push({ type: 'result', subtype: 'success', is_error: false, usage: { input_tokens: 1, output_tokens: 2 } })[0]).toMatchObject({ type: 'RUN_FINISHED' })
    expect(t.push({ type: 'assistant', message: { id: 'late', content: [{ type: 'text', text: 'late' }] } })).toEqual([])
    expect(t.finish({ exitCode: 1, stderrTail: 'x' })).toEqual([])
  })

  it('maps exit 127 to the install hint and other exits to their code with the stderr tail', () => {
    expect(make().finish({ exitCode: 127, stderrTail: 'sh: 1: claude: not found\n' })[0]).toMatchObject({ code: 'cli_not_found', message: expect.stringContaining('npm install -g @anthropic-ai/claude-code') })
    expect(make().finish({ exitCode: 3, stderrTail: 'boom\n' })[0]).toMatchObject({ code: 'cli_exit', message: 'Claude Code exited with code 3 without a result line.\nboom' })
    expect(make().finish({ exitCode: 3, stderrTail: '' })[0]).toMatchObject({ message: expect.stringContaining('It wrote nothing to stderr.') })
  })

  it('maps stop reasons', () => {
    expect(make().push({ type: 'result', subtype: 'success', stop_reason: 'max_tokens' })[0]).toMatchObject({ type: 'RUN_FINISHED', finishReason: 'length' })
    expect(make().push({ type: 'result', subtype: 'success', stop_reason: 'refusal' })[0]).toMatchObject({ type: 'RUN_FINISHED', finishReason: 'content_filter' })
  })
})

describe('translator robustness (malformed and reordered lines)', () => {
  const make = () => createClaudeCodeTranslator({ ...run, genId: createRunScopedIdGen('run-1') })
  const types = (chunks: StreamChunk[]) => chunks.map((c) => c.type)

  it('ends a tool call before its result when the CLI reports the result first (a refused tool)', () => {
    const t = make()
    t.push({ type: 'stream_event', event: { type: 'message_start', message: { id: 'm1' } } })
    t.push({ type: 'stream_event', event: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_w', name: 'Write' } } })
    t.push({ type: 'stream_event', event: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json: '{"file_path":"a"}' } } })
    expect(types(t.push({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'toolu_w', content: 'No such tool available: Write' }] } }))).toEqual(['TOOL_CALL_END', 'TOOL_CALL_RESULT'])
    expect(t.push({ type: 'stream_event', event: { type: 'content_block_stop', index: 0 } }), 'the late stop adds nothing').toEqual([])
  })

  it('never throws on malformed content and ignores non-string deltas', () => {
    const t = make()
    expect(() => t.push({ type: 'assistant', message: { id: 'm', content: [null, 1, 'x', { type: 'text', text: 42 }] } })).not.toThrow()
    expect(() => t.push({ type: 'user', message: { content: [null, { type: 'tool_result' }] } })).not.toThrow()
    t.push({ type: 'stream_event', event: { type: 'message_start', message: { id: 'm2' } } })
    t.push({ type: 'stream_event', event: { type: 'content_block_start', index: 0, content_block: { type: 'text' } } })
    expect(t.push({ type: 'stream_event', event: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: { a: 1 } } } })).toEqual([])
    expect(() => t.finish({ exitCode: 1, stderrTail: null as never })).not.toThrow()
  })

  it('closes a block that is restarted at the same index, and blocks left open by a new message', () => {
    const t = make()
    t.push({ type: 'stream_event', event: { type: 'message_start', message: { id: 'm1' } } })
    t.push({ type: 'stream_event', event: { type: 'content_block_start', index: 0, content_block: { type: 'text' } } })
    expect(types(t.push({ type: 'stream_event', event: { type: 'content_block_start', index: 0, content_block: { type: 'text' } } }))).toEqual(['TEXT_MESSAGE_END', 'TEXT_MESSAGE_START'])
    t.push({ type: 'stream_event', event: { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_x', name: 'Bash' } } })
    expect(types(t.push({ type: 'stream_event', event: { type: 'message_start', message: { id: 'm2' } } }))).toEqual(['TEXT_MESSAGE_END', 'TOOL_CALL_END'])
  })

  it('does not double streamed text when a complete message arrives without an id', () => {
    const t = make()
    t.push({ type: 'stream_event', event: { type: 'message_start', message: { id: 'm1' } } })
    expect(t.push({ type: 'assistant', message: { content: [{ type: 'text', text: 'again' }] } })).toEqual([])
  })

  it('reports cli_not_found only when the shell could not start the CLI, and says so in the message', () => {
    const notFound = make().finish({ exitCode: 127, stderrTail: 'sh: 1: claude: not found' })
    expect(notFound.at(-1)).toMatchObject({ code: 'cli_not_found', message: expect.stringContaining('was not found') })
    const own = make().finish({ exitCode: 1, stderrTail: 'open config: No such file or directory' })
    expect(own.at(-1)).toMatchObject({ code: 'cli_exit', message: expect.stringContaining('exited with code 1') })
  })
})

describe('usage, turn limit, bridged tools and the bridge status', () => {
  const make = () => createClaudeCodeTranslator({ ...run, model: 'sonnet', genId: createRunScopedIdGen('run-1') })
  const result = (extra: Record<string, unknown>) => make().push({ type: 'result', subtype: 'success', is_error: false, stop_reason: 'end_turn', ...extra })[0]

  it('omits usage the CLI never reported instead of presenting zeros', () => {
    const finished = result({ total_cost_usd: 0.01 })
    expect(finished).toMatchObject({ type: 'RUN_FINISHED', finishReason: 'stop' })
    expect(finished).not.toHaveProperty('usage')
    expect(result({ usage: {} }), 'no token counts is no usage').not.toHaveProperty('usage')
    expect(result({ usage: { input_tokens: 'many' } })).not.toHaveProperty('usage')
  })

  it("maps usage as core's TokenUsage: promptTokens is the whole input, split into cache reads and writes; thinking is part of the output", () => {
    const usage = { input_tokens: 12, cache_read_input_tokens: 300, cache_creation_input_tokens: 40, output_tokens: 25, output_tokens_details: { thinking_tokens: 9 } }
    expect(result({ usage, total_cost_usd: 0.002 })).toEqual({
      type: 'RUN_FINISHED',
      ...run,
      finishReason: 'stop',
      model: 'sonnet',
      usage: { promptTokens: 352, completionTokens: 25, totalTokens: 377, promptTokensDetails: { cachedTokens: 300, cacheWriteTokens: 40 }, completionTokensDetails: { reasoningTokens: 9 }, cost: 0.002 },
    })
  })

  it('ends a run that hit the turn limit with RUN_FINISHED, finish reason length, and its usage', () => {
    const line = { type: 'result', subtype: 'error_max_turns', is_error: true, num_turns: 4, stop_reason: 'tool_use', total_cost_usd: 0.003, usage: { input_tokens: 40, output_tokens: 8 } }
    expect(make().push(line)).toEqual([{ type: 'RUN_FINISHED', ...run, finishReason: 'length', model: 'sonnet', usage: { promptTokens: 40, completionTokens: 8, totalTokens: 48, cost: 0.003 } }])
    const t = make()
    t.push(line)
    expect(t.finish({ exitCode: 1, stderrTail: '' }), 'the result line closed the run').toEqual([])
  })

  it("reports a bridged tool by the name the app registered (streamed and whole), and keeps the CLI's own tools and other MCP servers as they are", () => {
    const streamed = make()
    streamed.push({ type: 'stream_event', event: { type: 'message_start', message: { id: 'm1' } } })
    expect(streamed.push({ type: 'stream_event', event: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'mcp__tanstack__get_weather' } } })).toEqual([
      { type: 'TOOL_CALL_START', toolCallId: 'toolu_1', toolCallName: 'get_weather', toolName: 'get_weather', metadata: { ...META, cliToolName: 'mcp__tanstack__get_weather' } },
    ])
    const whole = make().push({ type: 'assistant', message: { id: 'm2', content: [{ type: 'tool_use', id: 'toolu_2', name: 'mcp__tanstack__lookup_order', input: { orderId: 'A-17' } }, { type: 'tool_use', id: 'toolu_3', name: 'mcp__issues__lookup_issue', input: {} }, { type: 'tool_use', id: 'toolu_4', name: 'Bash', input: {} }] } })
    expect(whole.filter((c) => c.type === 'TOOL_CALL_START').map((c) => [c.toolCallName, c.toolName, c.metadata])).toEqual([
      ['lookup_order', 'lookup_order', { ...META, cliToolName: 'mcp__tanstack__lookup_order' }],
      ['mcp__issues__lookup_issue', 'mcp__issues__lookup_issue', META],
      ['Bash', 'Bash', META],
    ])
  })

  it('names a refused bridged tool by its app name in the permission denials', () => {
    const chunks = result({ permission_denials: [{ tool_name: 'mcp__tanstack__charge_card', tool_use_id: 'toolu_9', tool_input: { cents: 1999 } }, { tool_name: 'Bash', tool_use_id: 'toolu_8', tool_input: { command: 'git push' } }] })
    expect(chunks).toEqual({ type: 'CUSTOM', name: CLAUDE_CODE_PERMISSION_DENIALS_EVENT, value: { denials: [{ toolName: 'charge_card', toolUseId: 'toolu_9', input: { cents: 1999 } }, { toolName: 'Bash', toolUseId: 'toolu_8', input: { command: 'git push' } }] } })
  })

  it('emits tool-bridge.unavailable when system/init lists the tanstack server as not connected', () => {
    const init = (status: string) => make().push({ type: 'system', subtype: 'init', session_id: 's-1', tools: ['Bash'], mcp_servers: [{ name: 'issues', status: 'connected' }, { name: 'tanstack', status }] })
    for (const status of ['failed', 'needs-auth', 'pending']) {
      const chunks = init(status)
      expect(chunks.map((c) => c.type === 'CUSTOM' && c.name)).toEqual([CLAUDE_CODE_SESSION_EVENT, CLAUDE_CODE_INIT_EVENT, TOOL_BRIDGE_UNAVAILABLE_EVENT])
      expect(chunks[2], status).toEqual({ type: 'CUSTOM', name: TOOL_BRIDGE_UNAVAILABLE_EVENT, value: { server: 'tanstack', status, reason: expect.stringMatching(/^The host tools passed to chat\(\{ tools \}\) are not available to the agent in this run: .+\.$/) } })
    }
    expect((init('failed')[2] as { value: { reason: string } }).value.reason).toContain('could not connect')
    expect((init('needs-auth')[2] as { value: { reason: string } }).value.reason).toContain('authenticate')
    expect(init('connected').map((c) => c.type === 'CUSTOM' && c.name), 'a connected bridge is no news').toEqual([CLAUDE_CODE_SESSION_EVENT, CLAUDE_CODE_INIT_EVENT])
    expect(make().push({ type: 'system', subtype: 'init', mcp_servers: [{ name: 'issues', status: 'failed' }] }).map((c) => c.type === 'CUSTOM' && c.name), "another server's failure is not the bridge's").toEqual([CLAUDE_CODE_INIT_EVENT])
  })
})
