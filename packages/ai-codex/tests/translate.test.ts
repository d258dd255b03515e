/**
 * The translator on real CLI output: every recorded version folder must keep
 * producing the same chunk shapes (so format drift in a new CLI version shows
 * as a failing replay), deterministically, however the bytes are split into
 * chunks, with very long lines and noise lines mixed in.
 */
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { createRunScopedIdGen } from '@tanstack/ai-sandbox'
import { CODEX_ERROR_EVENT, CODEX_SESSION_EVENT, createCodexTranslator, translateCodexLines } from '../src/index.js'
import { BIG_TEXT, byteByByte, expectReplayAtEverySplit, expectReplayAtRandomCuts, expectReplayAtSplits, linesOf, multiByteStarts, piecesOf, reasoningMessage, seededRandom, textMessage, toolResult, withNoise } from '@testing/support/harness-recordings'
import { cliVersions, recordedStderr, recording, replay, sessionOf, translate, usageOf } from './helpers/recordings.js'

const versions = cliVersions()
const run = { runId: 'run-1', threadId: 'thread-1' }
const started = { type: 'RUN_STARTED', ...run }
const session = (bytes: Buffer) => ({ type: 'CUSTOM', name: CODEX_SESSION_EVENT, value: { sessionId: sessionOf(bytes) } })
const tool = (toolCallId: string, name: string, itemType: string, input: unknown, cliToolName?: string) => [
  { type: 'TOOL_CALL_START', toolCallId, toolCallName: name, toolName: name, metadata: { providerExecuted: true, harness: 'codex', itemType, ...(cliToolName ? { cliToolName } : {}) } },
  { type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(input) },
  { type: 'TOOL_CALL_END', toolCallId, input },
]
const finished = (bytes: Buffer) => {
  const usage = usageOf(bytes)
  return { type: 'RUN_FINISHED', ...run, finishReason: 'stop', model: 'gpt-5.5', usage: { promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, totalTokens: usage.input_tokens! + usage.output_tokens! } }
}

it('has recordings to replay', () => {
  expect(versions.length).toBeGreaterThan(0)
  for (const version of versions) expect(version).toMatch(/^\d+\.\d+\.\d+$/)
})

describe.each(versions)('codex %s recordings', (version) => {
  const load = (scenario: string) => recording(version, scenario)

  it('text: session id right after RUN_STARTED, the message once, RUN_FINISHED with usage', () => {
    const bytes = load('text')
    expect(translate(linesOf(bytes))).toEqual([started, session(bytes), ...textMessage('run-1-0', 'Hello from the fake model. Codex reports a whole message at once.'), finished(bytes)])
    expect(usageOf(bytes)).toMatchObject({ input_tokens: 21, output_tokens: 17 })
  })

  it('thinking: the reasoning item, then the answer', () => {
    const bytes = load('thinking')
    expect(translate(linesOf(bytes))).toEqual([
      started,
      session(bytes),
      ...reasoningMessage('run-1-0', 'Option A is cheaper, option B is faster. Speed matters more here.'),
      ...textMessage('run-1-1', 'Option B is better: it is faster.'),
      finished(bytes),
    ])
  })

  it('tools: a command that writes a file, a patch, a command that reads it, their results, and the text between', () => {
    const bytes = load('tools')
    const chunks = translate(linesOf(bytes))
    const write = linesOf(bytes).find((l) => (l as { item?: { id?: string } }).item?.id === 'item_0') as { item: { command: string } }
    const patched = linesOf(bytes).find((l) => (l as { item?: { type?: string } }).item?.type === 'file_change') as { item: { changes: { path: string }[] } }
    const path = patched.item.changes[0]!.path
    expect(path).toMatch(/\/notes\.txt$/)
    expect(chunks).toEqual([
      started,
      session(bytes),
      ...tool('run-1-0', 'exec_command', 'command_execution', { command: write.item.command }),
      toolResult('run-1-1', 'run-1-0', ''),
      ...textMessage('run-1-2', 'Created it; now the edit.'),
      ...tool('run-1-3', 'apply_patch', 'file_change', { changes: [{ path, kind: 'update' }] }),
      toolResult('run-1-4', 'run-1-3', `update ${path}`),
      ...tool('run-1-5', 'exec_command', 'command_execution', { command: "/bin/bash -lc 'cat notes.txt'" }),
      toolResult('run-1-6', 'run-1-5', 'final draft\nsecond line "quoted" $HOME\n'),
      ...textMessage('run-1-7', 'notes.txt now says final draft.'),
      finished(bytes),
    ])
    expect(write.item.command, 'the CLI reports the command as its shell ran it').toMatch(/^\/bin\/bash -lc .*notes\.txt/)
  })

  it("mcp: a bridged tool call under the app's tool name, with its arguments and result", () => {
    const bytes = load('mcp')
    expect(translate(linesOf(bytes))).toEqual([
      started,
      session(bytes),
      ...tool('run-1-0', 'get_weather', 'mcp_tool_call', { city: 'Paris' }, 'mcp__tanstack__get_weather'),
      toolResult('run-1-1', 'run-1-0', 'Sunny in Paris, 21 °C.'),
      ...textMessage('run-1-2', 'It is sunny in Paris.'),
      finished(bytes),
    ])
  })

  it("resume: the resumed run reports the first run's thread and only the new answer", () => {
    const first = load('resume-first-turn')
    const bytes = load('resume')
    expect(sessionOf(bytes)).toBe(sessionOf(first))
    expect(translate(linesOf(bytes))).toEqual([started, session(bytes), ...textMessage('run-1-0', 'You asked me to remember the word pelican.'), finished(bytes)])
    // Codex reports the whole thread's usage on a resumed turn (20+33 in, 4+10 out), not the turn's.
    expect(usageOf(bytes)).toMatchObject({ input_tokens: 53, output_tokens: 14 })
  })

  it('resume of an unknown thread id: RUN_ERROR session_not_found with the one-line reason, without the backtrace', () => {
    const stderr = recordedStderr(version, 'resume-unknown')
    expect(linesOf(load('resume-unknown')), 'the CLI fails before it prints anything on stdout').toEqual([])
    expect(stderr, 'recorded with RUST_BACKTRACE=1').toContain('Stack backtrace:')
    const id = /thread id ([0-9a-f-]{36})/.exec(stderr)![1]!
    const message = `Codex could not resume the thread: no rollout found for thread id ${id}. The thread is gone (threads live under $CODEX_HOME, default $HOME/.codex, inside the sandbox that ran them); start a new thread by leaving sessionId out of modelOptions.`
    expect(translate([], { exit: { exitCode: 1, stderrTail: stderr } })).toEqual([started, { type: 'RUN_ERROR', ...run, message, code: 'session_not_found', error: { message, code: 'session_not_found' } }])
    // Without the backtrace (RUST_BACKTRACE unset) the same.
    expect(translate([], { exit: { exitCode: 1, stderrTail: stderr.split('\n\nStack backtrace:')[0]! } })).toEqual(translate([], { exit: { exitCode: 1, stderrTail: stderr } }))
  })

  it("api error: the error notice, then RUN_ERROR with the server's message", () => {
    const bytes = load('api-error')
    const message = 'fixture says: the widget count is invalid'
    const raw = (linesOf(bytes).find((l) => (l as { type?: string }).type === 'error') as { message: string }).message
    expect(translate(linesOf(bytes), { exit: { exitCode: 1, stderrTail: '' } })).toEqual([
      started,
      session(bytes),
      { type: 'CUSTOM', name: CODEX_ERROR_EVENT, value: { message: raw } },
      { type: 'RUN_ERROR', ...run, message, code: 'api_error', error: { message, code: 'api_error' } },
    ])
  })

  it('policy denied: a command refused by an execpolicy rule leaves no tool item, only the answer', () => {
    const bytes = load('policy-denied')
    expect(translate(linesOf(bytes))).toEqual([started, session(bytes), ...textMessage('run-1-0', 'The push was refused.'), finished(bytes)])
  })

  it('is deterministic: the same bytes give the same chunks, twice, with run-scoped ids', () => {
    for (const scenario of ['text', 'tools', 'thinking', 'mcp', 'resume', 'api-error']) {
      const once = translateCodexLines(linesOf(load(scenario)), { ...run, genId: createRunScopedIdGen('run-1') })
      const twice = translateCodexLines(linesOf(load(scenario)), { ...run, genId: createRunScopedIdGen('run-1') })
      expect(twice, scenario).toEqual(once)
    }
  })

  it('the determinism check would catch random ids', () => {
    const lines = linesOf(load('tools'))
    const once = translateCodexLines(lines, { ...run, genId: () => randomUUID() })
    const twice = translateCodexLines(lines, { ...run, genId: () => randomUUID() })
    expect(twice).not.toEqual(once)
  })

  describe('through toLines', () => {
    const reference = (scenario: string) => translate(linesOf(load(scenario)))

    it('splits the tools recording at every byte position', async () => {
      const bytes = load('tools')
      const expected = reference('tools')
      await expectReplayAtEverySplit(bytes, expected, replay)
    })

    it('splits inside every multi-byte character of the mcp recording', async () => {
      const bytes = load('mcp')
      const expected = reference('mcp')
      const starts = multiByteStarts(bytes)
      expect(starts.length, 'the recording has multi-byte characters (the degree sign in the tool result)').toBeGreaterThan(0)
      await expectReplayAtSplits(bytes, starts.map((start) => start + 1), expected, replay)
    })

    it('splits recordings at random positions (seeded), one byte at a time included', async () => {
      const random = seededRandom(7)
      for (const scenario of ['tools', 'thinking', 'mcp', 'resume']) {
        const bytes = load(scenario)
        const expected = reference(scenario)
        expect((await replay(byteByByte(bytes))).chunks, `${scenario}: byte by byte`).toEqual(expected)
        await expectReplayAtRandomCuts(bytes, expected, replay, { random, trials: 100, label: scenario })
      }
    })

    it('carries a 2 MB message on one line intact', async () => {
      const lines = load('text').toString().split('\n')
      const at = lines.findIndex((line) => line.includes('"agent_message"'))
      const bigLine = JSON.parse(lines[at]!) as { item: { text: string } }
      bigLine.item.text = BIG_TEXT
      const bytes = Buffer.from([...lines.slice(0, at), JSON.stringify(bigLine), ...lines.slice(at + 1)].join('\n'))
      expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024)
      const { chunks } = await replay(piecesOf(bytes))
      const deltas = chunks.filter((c) => c.type === 'TEXT_MESSAGE_CONTENT').map((c) => c.delta)
      expect(deltas).toHaveLength(1)
      expect(deltas[0] === BIG_TEXT).toBe(true)
      expect(chunks.at(-1)!.type).toBe('RUN_FINISHED')
    })

    it('skips noise: non-JSON lines, blank lines, CRLF endings and JSON that is not a CLI event', async () => {
      const lines = load('tools').toString().split('\n').filter((line) => line !== '')
      const noise = ['npm WARN something odd', '', '   ', '{not json', '\u001b[31mcolored\u001b[0m', '42', 'null', '"a string"', '[1,2]', '{"unrelated":true}', '{"type":"item.updated","item":{"id":"item_0","type":"todo_list"}}']
      const mixed = withNoise(lines, noise)
      const { chunks, nonJson } = await replay([mixed])
      expect(chunks).toEqual(reference('tools'))
      expect(new Set(nonJson)).toEqual(new Set(['npm WARN something odd', '{not json', '\u001b[31mcolored\u001b[0m']))
    })
  })

  it('reports the exit when the CLI dies before its turn ended, after the tool call it started', () => {
    const lines = linesOf(load('tools'))
    const chunks = translate(lines.slice(0, 3), { exit: { exitCode: 143, signal: 'SIGTERM', stderrTail: '' } })
    expect(chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_ERROR'])
    expect(chunks.at(-1)).toMatchObject({ code: 'cli_exit', message: expect.stringContaining('killed by SIGTERM') })
  })
})

describe('translator edge cases', () => {
  const make = () => createCodexTranslator({ ...run, genId: createRunScopedIdGen('run-1') })
  const types = (chunks: StreamChunk[]) => chunks.map((c) => c.type)

  it('reports the session once, from the first thread.started', () => {
    const t = make()
    expect(t.push({ type: 'thread.started', thread_id: 't-1' })).toEqual([{ type: 'CUSTOM', name: CODEX_SESSION_EVENT, value: { sessionId: 't-1' } }])
    expect(t.push({ type: 'thread.started', thread_id: 't-2' })).toEqual([])
    expect(t.sessionId).toBe('t-1')
  })

  it('stops after the turn ended and ignores junk values', () => {
    const t = make()
    for (const junk of [null, 1, 'x', [], {}, { type: 'item.completed' }, { type: 'item.completed', item: 'x' }, { type: 'item.started', item: { type: 'command_execution' } }, { type: 'turn.started' }]) expect(t.push(junk)).toEqual([])
    expect(t.push({ type: 'turn.completed', usage: { input_tokens: 1, output_tokens: 2 } })[0]).toMatchObject({ type: 'RUN_FINISHED', usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 } })
    expect(t.push({ type: 'item.completed', item: { id: 'late', type: 'agent_message', text: 'late' } })).toEqual([])
    expect(t.finish({ exitCode: 1, stderrTail: 'x' })).toEqual([])
  })

  it('announces a tool call that completes without having started, then its result', () => {
    const t = make()
    expect(types(t.push({ type: 'item.completed', item: { id: 'item_9', type: 'command_execution', command: 'ls', aggregated_output: 'a\n', exit_code: 0, status: 'completed' } }))).toEqual(['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT'])
  })

  it('gives a reused CLI item id a new tool-call id once the first call completed', () => {
    const t = make()
    const call = (phase: string) => ({ type: `item.${phase}`, item: { id: 'item_0', type: 'command_execution', command: 'ls', status: 'completed', exit_code: 0 } })
    const first = [...t.push(call('started')), ...t.push(call('completed'))]
    const second = [...t.push(call('started')), ...t.push(call('completed'))]
    const ids = (chunks: StreamChunk[]) => new Set(chunks.map((c) => (c as { toolCallId?: string }).toolCallId))
    expect(ids(first)).toEqual(new Set(['run-1-0']))
    expect(ids(second)).toEqual(new Set(['run-1-2']))
  })

  it('reports failed commands with their exit code, and failed MCP calls with their error', () => {
    const t = make()
    const failed = t.push({ type: 'item.completed', item: { id: 'a', type: 'command_execution', command: 'false', aggregated_output: 'boom', exit_code: 2, status: 'failed' } }).at(-1)
    expect(failed).toMatchObject({ type: 'TOOL_CALL_RESULT', content: 'boom\n(exit code 2)' })
    const mcp = t.push({ type: 'item.completed', item: { id: 'b', type: 'mcp_tool_call', server: 's', tool: 't', arguments: { x: 1 }, result: null, error: { message: 'tool exploded' }, status: 'failed' } })
    expect(mcp[0]).toMatchObject({ toolCallName: 'mcp__s__t' })
    expect(mcp.at(-1)).toMatchObject({ content: 'tool exploded' })
    const web = t.push({ type: 'item.started', item: { id: 'c', type: 'web_search', query: 'tanstack' } })
    expect(web[2]).toMatchObject({ type: 'TOOL_CALL_END', input: { query: 'tanstack' } })
  })

  it('turns non-fatal error lines and items into codex.error events, and uses the last one when the CLI dies', () => {
    const t = make()
    expect(t.push({ type: 'error', message: 'Reconnecting... 1/5' })).toEqual([{ type: 'CUSTOM', name: CODEX_ERROR_EVENT, value: { message: 'Reconnecting... 1/5' } }])
    expect(t.push({ type: 'item.completed', item: { id: 'item_0', type: 'error', message: 'Model metadata for `x` not found.' } })).toEqual([{ type: 'CUSTOM', name: CODEX_ERROR_EVENT, value: { message: 'Model metadata for `x` not found.' } }])
    expect(t.finish({ exitCode: 1, stderrTail: '' })[0]).toMatchObject({ code: 'cli_exit', message: expect.stringContaining('Model metadata for `x` not found.') })
  })

  it('maps a failed turn: status codes, JSON error bodies and plain messages', () => {
    const fail = (message: string) => make().push({ type: 'turn.failed', error: { message } })[0]
    expect(fail('unexpected status 404 Not Found: No fixture matched')).toMatchObject({ code: 'api_error_404', message: 'unexpected status 404 Not Found: No fixture matched' })
    expect(fail('{"error":{"message":"quota exceeded","type":"insufficient_quota"}}')).toMatchObject({ code: 'api_error', message: 'quota exceeded' })
    expect(fail('Missing environment variable: `OPENAI_API_KEY`.')).toMatchObject({ code: 'turn_failed', message: 'Missing environment variable: `OPENAI_API_KEY`.' })
    expect(make().push({ type: 'turn.failed' })[0]).toMatchObject({ code: 'turn_failed', message: expect.stringContaining('without a message') })
  })

  it('omits usage the CLI never reported instead of presenting zeros', () => {
    for (const line of [{ type: 'turn.completed' }, { type: 'turn.completed', usage: null }, { type: 'turn.completed', usage: {} }, { type: 'turn.completed', usage: { input_tokens: 'x' } }]) {
      const [finished] = make().push(line)
      expect(finished, JSON.stringify(line)).toMatchObject({ type: 'RUN_FINISHED', finishReason: 'stop' })
      expect(finished, JSON.stringify(line)).not.toHaveProperty('usage')
    }
    expect(make().push({ type: 'turn.completed', usage: { input_tokens: 0, output_tokens: 0 } })[0], 'zeros the CLI reported are kept').toMatchObject({ usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } })
  })

  it('reports only the tanstack server\'s MCP calls by their app name; other servers keep mcp__<server>__<tool>', () => {
    const call = (server: string, tool: string) => make().push({ type: 'item.started', item: { id: 'i', type: 'mcp_tool_call', server, tool, arguments: {} } })[0]
    expect(call('tanstack', 'lookup_order')).toMatchObject({ toolCallName: 'lookup_order', toolName: 'lookup_order', metadata: { providerExecuted: true, cliToolName: 'mcp__tanstack__lookup_order' } })
    expect(call('issues', 'lookup_issue')).toMatchObject({ toolCallName: 'mcp__issues__lookup_issue', toolName: 'mcp__issues__lookup_issue' })
    expect(call('issues', 'lookup_issue')).not.toHaveProperty('metadata.cliToolName')
  })

  it('maps usage details: cached and cache-write input, reasoning output', () => {
    const [finished] = make().push({ type: 'turn.completed', usage: { input_tokens: 100, cached_input_tokens: 60, cache_write_input_tokens: 5, output_tokens: 30, reasoning_output_tokens: 12 } })
    expect((finished as { usage: unknown }).usage).toEqual({ promptTokens: 100, completionTokens: 30, totalTokens: 130, promptTokensDetails: { cachedTokens: 60, cacheWriteTokens: 5 }, completionTokensDetails: { reasoningTokens: 12 } })
  })

  it('maps exit 127 to the install hint and other exits to their code with the stderr tail, without the CODEX_HOME warning', () => {
    expect(make().finish({ exitCode: 127, stderrTail: 'sh: 1: codex: not found\n' })[0]).toMatchObject({ code: 'cli_not_found', message: expect.stringContaining('npm install -g @openai/codex') })
    const noise = 'WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries under temporary dir "/tmp"\n'
    expect(make().finish({ exitCode: 1, stderrTail: `${noise}Error: loading config: unknown variant \`yolo\`\n` })[0]).toMatchObject({ code: 'cli_exit', message: 'Codex exited with code 1 before its turn ended.\nError: loading config: unknown variant `yolo`' })
    expect(make().finish({ exitCode: 1, stderrTail: `${noise}Error: thread/resume: thread/resume failed: no rollout found for thread id x (code -32600)\n` })[0]).toMatchObject({ code: 'session_not_found', message: expect.not.stringContaining('PATH aliases') })
    expect(make().finish({ exitCode: 3, stderrTail: noise })[0]).toMatchObject({ message: expect.stringContaining('It wrote nothing to stderr.') })
    expect(() => make().finish({ exitCode: 1, stderrTail: null as never })).not.toThrow()
  })
})
