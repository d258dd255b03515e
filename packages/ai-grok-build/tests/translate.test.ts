/**
 * The translator on recorded ACP transcripts of the fake Grok Build agent
 * (the real CLI cannot be installed here): every recorded version folder must
 * keep producing the same chunk shapes, deterministically, however the
 * agent's stdout bytes are split, with noise lines mixed in, and without
 * re-emitting history the agent replays while a session loads.
 */
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createRunScopedIdGen } from '@tanstack/ai-sandbox'
import { GROK_BUILD_INIT_EVENT, GROK_BUILD_PERMISSION_EVENT, GROK_BUILD_PLAN_EVENT, GROK_BUILD_SESSION_EVENT, translateGrokBuildTranscript } from '../src/index.js'
import { BIG_TEXT, byteByByte, collapse, expectReplayAtEverySplit, expectReplayAtRandomCuts, expectReplayAtSplits, multiByteStarts, piecesOf, reasoningMessage, seededRandom, textMessage, toolResult, withNoise } from '@testing/support/harness-recordings'
import { agentStdout, cliVersions, recording, replay, sessionOf, translate } from './helpers/recordings.js'

const versions = cliVersions()
const run = { runId: 'run-1', threadId: 'thread-1' }
const META = { providerExecuted: true, harness: 'grok-build' }
const started = { type: 'RUN_STARTED', ...run }
const init = { type: 'CUSTOM', name: GROK_BUILD_INIT_EVENT, value: { agent: 'fake-grok', version: '0.1.0-fake', protocolVersion: 1, loadSession: true, mcpHttp: true } }
const session = (id: string) => ({ type: 'CUSTOM', name: GROK_BUILD_SESSION_EVENT, value: { sessionId: id } })
const tool = (toolCallId: string, name: string, kind: string, input: unknown, status: string, resultId: string, content: string, title = name): Record<string, unknown>[] => [
  { type: 'TOOL_CALL_START', toolCallId, toolCallName: name, toolName: name, metadata: { ...META, kind, title } },
  { type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(input) },
  { type: 'TOOL_CALL_END', toolCallId, input, metadata: { status } },
  toolResult(resultId, toolCallId, content),
]
const permission = (toolCallId: string, title: string, kind: string, decision: string, optionId: string) => ({ type: 'CUSTOM', name: GROK_BUILD_PERMISSION_EVENT, value: { toolCallId, title, kind, decision, optionId } })
const finished = (promptTokens: number, completionTokens: number, extra: Record<string, unknown> = {}) => ({
  type: 'RUN_FINISHED',
  ...run,
  finishReason: 'stop',
  model: 'grok-4.5',
  usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, ...extra, cost: (promptTokens + completionTokens) / 100_000 },
})
const NOTES = { path: 'notes.txt', content: 'first draft\nsecond line "quoted" $HOME\n' }
const PLAN = { type: 'CUSTOM', name: GROK_BUILD_PLAN_EVENT, value: { entries: [{ content: 'Write notes.txt', priority: 'high', status: 'in_progress' }, { content: 'Show notes.txt', priority: 'medium', status: 'pending' }] } }

it('has recordings to replay', () => {
  expect(versions.length).toBeGreaterThan(0)
})

describe.each(versions)('grok-build %s recordings', (version) => {
  const load = (scenario: string) => recording(version, scenario)

  it('text: init and session id first, the streamed text once, RUN_FINISHED with usage and cost', () => {
    const entries = load('text')
    const chunks = translate(entries)
    expect(collapse(chunks)).toEqual([started, init, session(sessionOf(entries)), ...textMessage('run-1-0', 'Hello from the fake Grok agent. This reply is long enough to arrive in several chunks — über “quoted”.'), finished(21, 17)])
    expect(chunks.filter((c) => c.type === 'TEXT_MESSAGE_CONTENT').length, 'the text arrived as several deltas').toBe(3)
  })

  it('reasoning: a reasoning message with its thought tokens, then the text', () => {
    const entries = load('reasoning')
    expect(collapse(translate(entries))).toEqual([
      started,
      init,
      session(sessionOf(entries)),
      ...reasoningMessage('run-1-0', 'Option A is cheaper, option B is faster. Speed matters more here.'),
      ...textMessage('run-1-1', 'Option B is better: it is faster.'),
      finished(25, 19, { completionTokensDetails: { reasoningTokens: 12 } }),
    ])
  })

  it('tools with permission requests: the write allowed, the shell command refused, each answer reported', () => {
    const entries = load('tools')
    expect(collapse(translate(entries))).toEqual([
      started,
      init,
      session(sessionOf(entries)),
      PLAN,
      ...textMessage('run-1-0', "I'll write notes.txt first."),
      ...tool('call_write_1', 'Write notes.txt', 'edit', NOTES, 'completed', 'run-1-1', '[diff /workspace/notes.txt]').toSpliced(2, 0, permission('call_write_1', 'Write notes.txt', 'edit', 'allow', 'allow-once')),
      ...tool('call_exec_2', 'cat notes.txt', 'execute', { command: 'cat notes.txt' }, 'failed', 'run-1-2', 'The client refused permission to run cat notes.txt.').toSpliced(2, 0, permission('call_exec_2', 'cat notes.txt', 'execute', 'deny', 'reject-once')),
      ...textMessage('run-1-3', 'Done: notes.txt is written.'),
      finished(30, 24, { promptTokensDetails: { cachedTokens: 8 } }),
    ])
  })

  it('tools under the approve flag: no permission requests, the command output as the result', () => {
    const entries = load('tools-auto-approved')
    expect(entries.some((e) => e.message.method === 'session/request_permission')).toBe(false)
    const chunks = collapse(translate(entries))
    expect(chunks.filter((c) => c.name === GROK_BUILD_PERMISSION_EVENT)).toEqual([])
    expect(chunks.filter((c) => c.type === 'TOOL_CALL_RESULT').map((c) => c.content)).toEqual(['[diff /workspace/notes.txt]', NOTES.content])
  })

  it('resume: the loaded session reports its id and only the new answer, never the replayed history', () => {
    const first = load('resume-first-turn')
    const entries = load('resume')
    expect(sessionOf(entries)).toBe(sessionOf(first))
    const replayed = entries.filter((e) => (e.message.params as { update?: { sessionUpdate?: string } } | undefined)?.update?.sessionUpdate === 'agent_message_chunk' && !(e.message.params as { update: { messageId?: string } }).update.messageId)
    expect(replayed.length, 'the recording holds the replayed history').toBeGreaterThan(0)
    expect(collapse(translate(entries))).toEqual([started, init, session(sessionOf(first)), ...textMessage('run-1-0', 'You first asked: "Remember the word pelican."'), finished(33, 10)])
  })

  it("api error: the text so far is closed, then RUN_ERROR with the agent's message and JSON-RPC code", () => {
    const entries = load('api-error')
    const message = 'Grok Build: session/prompt failed: xAI API error: 400 the widget count is invalid.'
    expect(collapse(translate(entries))).toEqual([started, init, session(sessionOf(entries)), ...textMessage('run-1-0', 'Let me check… '), { type: 'RUN_ERROR', ...run, message, code: 'acp_error_-32603', error: { message, code: 'acp_error_-32603' } }])
  })

  it('resume of an unknown session: the -32002 answer to session/load is RUN_ERROR session_not_found, with no session event', () => {
    const message = 'Grok Build could not resume session "ses_gone": session/load failed: Resource not found. The session is gone (the agent keeps sessions under its HOME inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions.'
    expect(translate(load('resume-unknown'))).toEqual([started, init, { type: 'RUN_ERROR', ...run, message, code: 'session_not_found', error: { message, code: 'session_not_found' } }])
  })

  it('auth required: RUN_ERROR auth_required saying how to give the CLI a key', () => {
    const chunks = translate(load('auth-required'))
    expect(chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'RUN_ERROR'])
    expect(chunks[2]).toMatchObject({ code: 'auth_required', message: expect.stringContaining('Set XAI_API_KEY') })
  })

  it('host tool: the bridged MCP call shows as a tool call with its result', () => {
    const entries = load('host-tool')
    expect(collapse(translate(entries))).toEqual([
      started,
      init,
      session(sessionOf(entries)),
      ...tool('call_mcp_1', 'get_weather', 'other', { city: 'Paris' }, 'completed', 'run-1-0', 'Sunny in Paris', 'tanstack: get_weather'),
      ...textMessage('run-1-1', 'The host tool said: Sunny in Paris'),
      finished(12, 9),
    ])
  })

  it('is deterministic: the same transcript gives the same chunks, twice, with run-scoped ids', () => {
    for (const scenario of ['text', 'reasoning', 'tools', 'resume', 'api-error', 'host-tool']) {
      const once = translateGrokBuildTranscript(load(scenario), { ...run, genId: createRunScopedIdGen('run-1') })
      const twice = translateGrokBuildTranscript(load(scenario), { ...run, genId: createRunScopedIdGen('run-1') })
      expect(twice, scenario).toEqual(once)
    }
  })

  it('the determinism check would catch random ids', () => {
    const entries = load('tools')
    const once = translateGrokBuildTranscript(entries, { ...run, genId: () => randomUUID() })
    const twice = translateGrokBuildTranscript(entries, { ...run, genId: () => randomUUID() })
    expect(twice).not.toEqual(once)
  })

  describe('through the transport (jsonLinesReadable → ndJsonStream)', () => {
    it('splits the text recording at every byte position', async () => {
      const entries = load('text')
      const bytes = agentStdout(entries)
      const expected = translate(entries)
      await expectReplayAtEverySplit(bytes, expected, (pieces) => replay(entries, pieces))
    })

    it('splits inside every multi-byte character', async () => {
      const entries = load('text')
      const bytes = agentStdout(entries)
      const expected = translate(entries)
      const starts = multiByteStarts(bytes)
      expect(starts.length, 'the recording has multi-byte characters').toBeGreaterThan(3)
      await expectReplayAtSplits(bytes, starts.flatMap((start) => [start + 1, start + 2, start + 3]), expected, (pieces) => replay(entries, pieces))
    })

    it('splits larger recordings at random positions (seeded)', async () => {
      const random = seededRandom(11)
      for (const scenario of ['tools', 'resume', 'reasoning', 'host-tool']) {
        const entries = load(scenario)
        const bytes = agentStdout(entries)
        const expected = translate(entries)
        await expectReplayAtRandomCuts(bytes, expected, (pieces) => replay(entries, pieces), { random, trials: 100, label: scenario })
      }
    })

    it('feeds one byte at a time', async () => {
      const entries = load('tools')
      const bytes = agentStdout(entries)
      expect((await replay(entries, byteByByte(bytes))).chunks).toEqual(translate(entries))
    })

    it('carries a 2 MB text delta on one line intact', async () => {
      const entries = load('text')
      const at = entries.findIndex((e) => JSON.stringify(e).includes('agent_message_chunk'))
      const bigEntry = structuredClone(entries[at]!)
      ;(bigEntry.message.params as { update: { content: { text: string } } }).update.content.text = BIG_TEXT
      const withBig = [...entries.slice(0, at), bigEntry, ...entries.slice(at + 1)]
      const bytes = agentStdout(withBig)
      expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024)
      const { chunks } = await replay(withBig, piecesOf(bytes))
      const deltas = chunks.filter((c) => c.type === 'TEXT_MESSAGE_CONTENT').map((c) => (c as { delta: string }).delta)
      expect(deltas[0] === BIG_TEXT).toBe(true)
      expect(chunks.at(-1)!.type).toBe('RUN_FINISHED')
    })

    it('sets noise aside: banners, blank lines, CRLF endings, non-object JSON', async () => {
      const entries = load('tools')
      const lines = agentStdout(entries).toString().split('\n').filter((line) => line !== '')
      const noise = ['fake grok 0.1.0 ready', '', '   ', '{not json', '\u001b[31mcolored\u001b[0m', '42', 'null', '"a string"', '[1,2]']
      const mixed = withNoise(lines, noise)
      const { chunks, nonJson } = await replay(entries, [mixed])
      expect(chunks).toEqual(translate(entries))
      expect(new Set(nonJson)).toEqual(new Set(['fake grok 0.1.0 ready', '{not json', '\u001b[31mcolored\u001b[0m', '42', 'null', '"a string"', '[1,2]']))
    })
  })

  it('closes the open message and reports the exit when the CLI dies mid-turn', () => {
    const entries = load('text')
    const cut = entries.findIndex((e) => JSON.stringify(e).includes('agent_message_chunk'))
    const chunks = translate(entries.slice(0, cut + 1), { exit: { exitCode: 143, signal: 'SIGTERM', stderrTail: '' } })
    expect(chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'CUSTOM', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_ERROR'])
    expect(chunks.at(-1)).toMatchObject({ code: 'cli_exit', message: expect.stringContaining('killed by SIGTERM') })
  })

  it('ends tool calls left running when the CLI dies', () => {
    const entries = load('tools')
    const cut = entries.findIndex((e) => e.message.method === 'session/request_permission')
    const chunks = translate(entries.slice(0, cut + 1), { exit: { exitCode: 1, stderrTail: 'boom' } })
    expect(chunks.slice(-2)).toEqual([
      { type: 'TOOL_CALL_END', toolCallId: 'call_write_1', input: NOTES, metadata: { status: 'unfinished' } },
      { type: 'RUN_ERROR', ...run, message: 'Grok Build exited with code 1 before the turn ended.\nboom', code: 'cli_exit', error: { message: 'Grok Build exited with code 1 before the turn ended.\nboom', code: 'cli_exit' } },
    ])
  })
})
