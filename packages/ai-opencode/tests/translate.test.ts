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
import { createOpencodeTranslator, OPENCODE_PERMISSION_DENIED_EVENT, OPENCODE_SESSION_EVENT, translateOpencodeLines } from '../src/index.js'
import { BIG_TEXT, expectReplayAtEverySplit, expectReplayAtRandomCuts, expectReplayAtSplits, linesOf, multiByteStarts, piecesOf, reasoningMessage, seededRandom, textMessage, toolResult, withNoise } from '@testing/support/harness-recordings'
import { cliVersions, exitOf, recording, replay, sessionOf, translate } from './helpers/recordings.js'

const versions = cliVersions()
const META = { providerExecuted: true, harness: 'opencode' }
const run = { runId: 'run-1', threadId: 'thread-1' }
const started = { type: 'RUN_STARTED', ...run }
const session = (bytes: Buffer) => ({ type: 'CUSTOM', name: OPENCODE_SESSION_EVENT, value: { sessionId: sessionOf(bytes) } })
const tool = (toolCallId: string, name: string, input: unknown) => [
  { type: 'TOOL_CALL_START', toolCallId, toolCallName: name, toolName: name, metadata: META },
  { type: 'TOOL_CALL_ARGS', toolCallId, delta: JSON.stringify(input) },
  { type: 'TOOL_CALL_END', toolCallId, input },
]
const finished = (promptTokens: number, completionTokens: number, finishReason = 'stop') => ({
  type: 'RUN_FINISHED',
  ...run,
  finishReason,
  model: 'aimock/fake-model',
  usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens, cost: 0 },
})
const BASH_INPUT = { command: "printf 'first draft\\nsecond line \"quoted\" $HOME — ünï\\n' > notes.txt && echo created", description: 'Create notes.txt' }

it('has recordings to replay', () => {
  expect(versions.length).toBeGreaterThan(0)
  for (const version of versions) expect(version).toMatch(/^\d+\.\d+\.\d+$/)
})

describe.each(versions)('opencode %s recordings', (version) => {
  const load = (scenario: string) => recording(version, scenario)

  it('text: session id right after RUN_STARTED, the text part once, RUN_FINISHED with usage', () => {
    const bytes = load('text')
    expect(translate(linesOf(bytes))).toEqual([started, session(bytes), ...textMessage('run-1-0', 'Hello from the fake model. OpenCode prints each text part whole, once it is complete.'), finished(21, 17)])
  })

  it('tools: the bash and read calls with their input and output, the text between, usage summed over the steps', () => {
    const bytes = load('tools')
    expect(translate(linesOf(bytes))).toEqual([
      started,
      session(bytes),
      ...tool('call_e2e_1_bash', 'bash', BASH_INPUT),
      toolResult('run-1-0', 'call_e2e_1_bash', 'created\n'),
      ...textMessage('run-1-1', 'Created it; now I read it back.'),
      ...tool('call_e2e_2_read', 'read', { filePath: 'notes.txt' }),
      toolResult('run-1-2', 'call_e2e_2_read', expect.stringContaining('1: first draft\n2: second line "quoted" $HOME — ünï')),
      ...textMessage('run-1-3', 'notes.txt holds the first draft.'),
      finished(30 + 40 + 64, 11 + 12 + 9),
    ])
  })

  it('thinking: a reasoning message, then the text', () => {
    const bytes = load('thinking')
    expect(translate(linesOf(bytes))).toEqual([
      started,
      session(bytes),
      ...reasoningMessage('run-1-0', 'Option A is cheaper, option B is faster. Speed matters more here.'),
      ...textMessage('run-1-1', 'Option B is better: it is faster.'),
      finished(25, 19),
    ])
  })

  it("resume: the resumed run reports the first run's session and only the new answer", () => {
    const first = load('resume-first-turn')
    const bytes = load('resume')
    expect(sessionOf(bytes)).toBe(sessionOf(first))
    expect(translate(linesOf(first))).toEqual([started, session(first), ...textMessage('run-1-0', 'Noted: pelican.'), finished(20, 4)])
    expect(translate(linesOf(bytes))).toEqual([started, session(bytes), ...textMessage('run-1-0', 'You asked me to remember the word pelican.'), finished(33, 10)])
  })

  it("api error: RUN_ERROR with the server's message and status; the exit adds nothing", () => {
    const bytes = load('api-error')
    const message = 'fixture says: the widget count is invalid'
    expect(translate(linesOf(bytes), { exit: exitOf('api-error') })).toEqual([started, session(bytes), { type: 'RUN_ERROR', ...run, message, code: 'api_error_400', error: { message, code: 'api_error_400' } }])
  })

  it('policy denied: the refused call carries OpenCode\'s reason and a permission-denied event, then the run goes on', () => {
    const bytes = load('policy-denied')
    const push = { command: 'git push origin main', description: 'Push' }
    expect(translate(linesOf(bytes))).toEqual([
      started,
      session(bytes),
      ...tool('call_e2e_policy_1_push', 'bash', push),
      toolResult('run-1-0', 'call_e2e_policy_1_push', expect.stringMatching(/^The user has specified a rule which prevents you from using this specific tool call.*git push \*/)),
      { type: 'CUSTOM', name: OPENCODE_PERMISSION_DENIED_EVENT, value: { toolCallId: 'call_e2e_policy_1_push', toolName: 'bash', input: push, reason: 'rule' } },
      ...tool('call_e2e_policy_2_ok', 'bash', { command: 'echo status-ok > status.txt', description: 'Write the status' }),
      toolResult('run-1-1', 'call_e2e_policy_2_ok', '(no output)'),
      ...textMessage('run-1-2', 'The push was refused; the status ran.'),
      finished(30 + 40 + 50, 8 + 8 + 9),
    ])
  })

  it('is deterministic: the same bytes give the same chunks, twice, with run-scoped ids', () => {
    for (const scenario of ['text', 'tools', 'thinking', 'resume', 'api-error', 'policy-denied']) {
      const once = translateOpencodeLines(linesOf(load(scenario)), { ...run, genId: createRunScopedIdGen('run-1') }, exitOf(scenario))
      const twice = translateOpencodeLines(linesOf(load(scenario)), { ...run, genId: createRunScopedIdGen('run-1') }, exitOf(scenario))
      expect(twice, scenario).toEqual(once)
    }
  })

  it('the determinism check would catch random ids', () => {
    const lines = linesOf(load('tools'))
    const once = translateOpencodeLines(lines, { ...run, genId: () => randomUUID() })
    const twice = translateOpencodeLines(lines, { ...run, genId: () => randomUUID() })
    expect(twice).not.toEqual(once)
  })

  describe('through toLines', () => {
    const reference = (scenario: string) => translate(linesOf(load(scenario)), { exit: exitOf(scenario) })

    it('splits the text recording at every byte position', async () => {
      const bytes = load('text')
      const expected = reference('text')
      await expectReplayAtEverySplit(bytes, expected, replay)
    })

    it('splits inside every multi-byte character of the tools recording', async () => {
      const bytes = load('tools')
      const expected = reference('tools')
      const starts = multiByteStarts(bytes)
      expect(starts.length, 'the recording has multi-byte characters (— ünï in the command and the file)').toBeGreaterThan(0)
      await expectReplayAtSplits(bytes, starts.flatMap((start) => [start + 1, start + 2]), expected, replay)
    })

    it('splits larger recordings at random positions (seeded)', async () => {
      const random = seededRandom(7)
      for (const scenario of ['tools', 'thinking', 'policy-denied']) {
        const bytes = load(scenario)
        const expected = reference(scenario)
        await expectReplayAtRandomCuts(bytes, expected, replay, { random, trials: 200, label: scenario })
      }
    })

    it('carries a 2 MB text part on one line intact', async () => {
      const lines = load('text').toString().split('\n')
      const at = lines.findIndex((line) => line.includes('"type":"text"'))
      const bigLine = JSON.parse(lines[at]!) as { part: { text: string } }
      bigLine.part.text = BIG_TEXT
      const bytes = Buffer.from([...lines.slice(0, at), JSON.stringify(bigLine), ...lines.slice(at)].join('\n'))
      expect(bytes.length).toBeGreaterThan(2 * 1024 * 1024)
      const { chunks } = await replay(piecesOf(bytes))
      const deltas = chunks.filter((c) => c.type === 'TEXT_MESSAGE_CONTENT').map((c) => c.delta)
      expect(deltas[0]!.length).toBe(BIG_TEXT.length)
      expect(deltas[0] === BIG_TEXT).toBe(true)
      expect(deltas[1]).toBe('Hello from the fake model. OpenCode prints each text part whole, once it is complete.')
      expect(chunks.at(-1)!.type).toBe('RUN_FINISHED')
    })

    it('skips noise: non-JSON lines, blank lines, CRLF endings, the CLI\'s warnings and JSON that is not a CLI event', async () => {
      const lines = load('tools').toString().split('\n').filter((line) => line !== '')
      const noise = ['! permission requested: bash (rm -rf /); auto-rejecting', '', '   ', '{not json', '\u001b[91m\u001b[1mError: \u001b[0mSession not found', '42', 'null', '"a string"', '[1,2]', '{"unrelated":true}']
      const mixed = withNoise(lines, noise)
      const { chunks, nonJson } = await replay([mixed])
      expect(chunks).toEqual(reference('tools'))
      expect(new Set(nonJson)).toEqual(new Set(['! permission requested: bash (rm -rf /); auto-rejecting', '{not json', '\u001b[91m\u001b[1mError: \u001b[0mSession not found']))
    })
  })

  it('reports the exit when the CLI dies part-way (no final result line exists to wait for)', () => {
    const lines = linesOf(load('tools'))
    const chunks = translate(lines.slice(0, 3), { exit: { exitCode: 143, signal: 'SIGTERM', stderrTail: '' } })
    expect(chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'TOOL_CALL_RESULT', 'RUN_ERROR'])
    expect(chunks.at(-1)).toMatchObject({ code: 'cli_exit', message: expect.stringContaining('killed by SIGTERM') })
  })
})

describe('translator edge cases', () => {
  const make = (extra: { resumeSessionId?: string } = {}) => createOpencodeTranslator({ ...run, genId: createRunScopedIdGen('run-1'), ...extra })
  const types = (chunks: StreamChunk[]) => chunks.map((c) => c.type)

  it('reports the session once, from the first line that has one', () => {
    const t = make()
    expect(t.push({ type: 'step_start', sessionID: 'ses_1', part: { type: 'step-start' } })).toEqual([{ type: 'CUSTOM', name: OPENCODE_SESSION_EVENT, value: { sessionId: 'ses_1' } }])
    expect(t.push({ type: 'step_start', sessionID: 'ses_1' })).toEqual([])
    expect(t.sessionId).toBe('ses_1')
  })

  it('ignores junk values, unknown line types, empty texts and tools that have not finished', () => {
    const t = make()
    for (const junk of [null, 1, 'x', [], {}, { type: 'text' }, { type: 'text', part: { text: '' } }, { type: 'text', part: { text: 42 } }, { type: 'reasoning', part: null }, { type: 'tool_use', part: { tool: 'bash', state: { status: 'running' } } }, { type: 'step_finish', part: { tokens: 'many' } }, { type: 'session.idle' }]) {
      expect(t.push(junk), JSON.stringify(junk)).toEqual([])
    }
    expect(t.finish({ exitCode: 0, stderrTail: '' }), 'no step reported usage: none, not zeros').toEqual([{ type: 'RUN_FINISHED', ...run, finishReason: 'stop' }])
  })

  it('omits usage when no step reported token counts, and keeps the counts a step did report', () => {
    const t = make()
    t.push({ type: 'step_finish', part: { reason: 'tool-calls', tokens: {} } })
    expect(t.push({ type: 'step_finish', part: { reason: 'stop' } })[0]).not.toHaveProperty('usage')
    const zero = make()
    expect(zero.push({ type: 'step_finish', part: { reason: 'stop', tokens: { total: 0, input: 0, output: 0, reasoning: 0, cache: { read: 0, write: 0 } } } })[0], 'zeros the CLI reported are kept').toMatchObject({ usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 } })
  })

  it("reports a bridged tool (tanstack_<tool>) by the app's name, in the tool call and its permission denial; other tools keep OpenCode's names", () => {
    const chunks = make().push({ type: 'tool_use', part: { tool: 'tanstack_charge_card', callID: 'c1', state: { status: 'error', input: { cents: 1999 }, error: 'The user has specified a rule which prevents you from using this specific tool call.' } } })
    expect(chunks[0]).toEqual({ type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'charge_card', toolName: 'charge_card', metadata: { ...META, cliToolName: 'tanstack_charge_card' } })
    expect(chunks.at(-1)).toEqual({ type: 'CUSTOM', name: OPENCODE_PERMISSION_DENIED_EVENT, value: { toolCallId: 'c1', toolName: 'charge_card', input: { cents: 1999 }, reason: 'rule' } })
    for (const name of ['bash', 'issues_lookup_issue', 'tanstack']) {
      expect(make().push({ type: 'tool_use', part: { tool: name, callID: 'c2', state: { status: 'completed', input: {}, output: 'ok' } } })[0], name).toEqual({ type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: name, toolName: name, metadata: META })
    }
  })

  it('gives a tool without a call id a generated one and reports a failed tool\'s error as its result', () => {
    const chunks = make().push({ type: 'tool_use', part: { type: 'tool', tool: 'read', state: { status: 'error', input: { filePath: 'nope.txt' }, error: 'File not found: /workspace/nope.txt' } } })
    expect(chunks).toEqual([...tool('run-1-0', 'read', { filePath: 'nope.txt' }), toolResult('run-1-1', 'run-1-0', 'File not found: /workspace/nope.txt')])
  })

  it('reports an ask that the headless run rejected as a permission denial', () => {
    const chunks = make().push({ type: 'tool_use', part: { tool: 'bash', callID: 'c1', state: { status: 'error', input: { command: 'npm publish' }, error: 'The user rejected permission to use this specific tool call.' } } })
    expect(chunks.at(-1)).toEqual({ type: 'CUSTOM', name: OPENCODE_PERMISSION_DENIED_EVENT, value: { toolCallId: 'c1', toolName: 'bash', input: { command: 'npm publish' }, reason: 'rejected' } })
  })

  it('sums cached and reasoning tokens and cost over steps, and maps the last step\'s reason', () => {
    const t = make()
    t.push({ type: 'step_finish', part: { reason: 'tool-calls', tokens: { input: 10, output: 5, reasoning: 2, cache: { read: 100, write: 7 } }, cost: 0.25 } })
    t.push({ type: 'step_finish', part: { reason: 'length', tokens: { input: 3, output: 4, reasoning: 0, cache: { read: 50, write: 0 } }, cost: 0.5 } })
    expect(t.finish({ exitCode: 0, stderrTail: '' })).toEqual([
      {
        type: 'RUN_FINISHED',
        ...run,
        finishReason: 'length',
        usage: { promptTokens: 13 + 150 + 7, completionTokens: 9 + 2, totalTokens: 170 + 11, promptTokensDetails: { cachedTokens: 150, cacheWriteTokens: 7 }, completionTokensDetails: { reasoningTokens: 2 }, cost: 0.75 },
      },
    ])
    const reported = make()
    expect(reported.push({ type: 'step_finish', part: { reason: 'stop', tokens: { total: 200, input: 10, output: 5, reasoning: 2, cache: { read: 100, write: 7 } } } })[0], "OpenCode's own total when every step gave one").toMatchObject({ usage: { promptTokens: 117, completionTokens: 7, totalTokens: 200 } })
    for (const [reason, mapped] of [['tool-calls', 'tool_calls'], ['content-filter', 'content_filter'], ['other', 'stop']] as const) {
      const m = make()
      m.push({ type: 'step_finish', part: { reason } })
      expect(m.finish({ exitCode: 0, stderrTail: '' })[0], reason).toMatchObject({ finishReason: mapped })
    }
  })

  it("closes the run at the last step (step_finish with reason stop): the client need not wait for the CLI's exit, and later lines add nothing", () => {
    const t = make()
    expect(t.push({ type: 'step_finish', part: { reason: 'tool-calls', tokens: { input: 1, output: 1 } } }), 'a step that continues closes nothing').toEqual([])
    expect(t.push({ type: 'step_finish', part: { reason: 'stop', tokens: { input: 2, output: 3 } } })).toEqual([{ type: 'RUN_FINISHED', ...run, finishReason: 'stop', usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 } }])
    expect(t.push({ type: 'text', part: { text: 'late' } })).toEqual([])
    expect(t.finish({ exitCode: 1, stderrTail: 'killed' })).toEqual([])
  })

  it('closes the run at an error line: later lines and the exit add nothing', () => {
    const t = make()
    expect(t.push({ type: 'error', sessionID: 'ses_1', error: { name: 'ProviderAuthError', data: { providerID: 'x', message: 'Bad key' } } })).toEqual([
      { type: 'CUSTOM', name: OPENCODE_SESSION_EVENT, value: { sessionId: 'ses_1' } },
      { type: 'RUN_ERROR', ...run, message: 'Bad key', code: 'provider_auth_error', error: { message: 'Bad key', code: 'provider_auth_error' } },
    ])
    expect(t.push({ type: 'text', part: { text: 'late' } })).toEqual([])
    expect(t.finish({ exitCode: 1, stderrTail: 'x' })).toEqual([])
    expect(make().push({ type: 'error' })[0]).toMatchObject({ type: 'RUN_ERROR', message: 'OpenCode reported UnknownError.', code: 'unknown_error' })
  })

  it('maps a shell that cannot find the CLI to the install hint', () => {
    for (const exit of [{ exitCode: 127, stderrTail: 'sh: 1: opencode: not found\n' }, { exitCode: 126, stderrTail: '' }, { exitCode: 2, stderrTail: 'sh: 1: /opt/x/opencode: Permission denied' }]) {
      expect(types(make().finish(exit))).toEqual(['RUN_ERROR'])
      expect(make().finish(exit)[0]).toMatchObject({ code: 'cli_not_found', message: expect.stringContaining('npm install -g opencode-ai') })
    }
  })

  it('names the session OpenCode could not find, with how resume works', () => {
    const [error] = make({ resumeSessionId: 'ses_gone' }).finish({ exitCode: 1, stderrTail: '\u001b[91m\u001b[1mError: \u001b[0mSession not found\n' })
    const message = "OpenCode could not resume session ses_gone: Session not found. The session is gone (sessions live in OpenCode's data directory under $HOME inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions."
    expect(error).toEqual({ type: 'RUN_ERROR', runId: 'run-1', threadId: 'thread-1', message, code: 'session_not_found', error: { message, code: 'session_not_found' } })
  })

  it('reports other exits with their code and the stderr tail, ANSI colours removed', () => {
    expect(make().finish({ exitCode: 1, stderrTail: '\u001b[91mError: \u001b[0mConfig file at OPENCODE_CONFIG_CONTENT is not valid JSON(C)\n' })[0]).toMatchObject({
      code: 'cli_exit',
      message: 'OpenCode exited with code 1.\nError: Config file at OPENCODE_CONFIG_CONTENT is not valid JSON(C)',
    })
    expect(make().finish({ exitCode: 3, stderrTail: '' })[0]).toMatchObject({ message: 'OpenCode exited with code 3. It wrote nothing to stderr.' })
    expect(() => make().finish({ exitCode: 1, stderrTail: null as never })).not.toThrow()
  })
})
