/**
 * The real `claude` CLI, driven by `claudeCodeText` through chat() + withSandbox
 * over the local-process provider, against aimock on 127.0.0.1: text, tools
 * that change the workspace, resume, errors, abort, and bad input. Each test
 * owns its fake model and CLI HOME and removes them; afterAll checks that no
 * sandbox directory, HOME or process of ours is left.
 */
import { createHash, randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { ModelMessage, StreamChunk } from '@tanstack/ai'
import { CLAUDE_CODE_INIT_EVENT, CLAUDE_CODE_SESSION_EVENT, claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, PromptTooLargeError, SandboxConfigError, SandboxError, type SandboxDefinition, type SandboxProvider } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, conversationOf, makeClaudeHome, startFakeModel, userTexts, type ClaudeHome, type FakeModel } from '../src/aimock.js'
import { ofType, processesMatching, processesWithHome, recording, runClaude, waitFor } from './helpers/run-claude.js'

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const fakeBin = fileURLToPath(new URL('./fixtures/bin/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'claude-code-e2e-'))
const provider = localProcessSandbox({ root })
const executable = claudeBinary()

/** Everything a test started, removed in afterEach. */
const started: { models: FakeModel[]; homes: ClaudeHome[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], sandboxes: [] }
const allHomes: string[] = []

afterEach(async () => {
  for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  for (const model of started.models.splice(0)) await model.stop()
  for (const home of started.homes.splice(0)) home.cleanup()
})

afterAll(() => {
  const leftDirs = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(leftDirs, 'every sandbox directory is removed').toEqual([])
  expect(allHomes.filter((dir) => existsSync(dir)), 'every CLI HOME is removed').toEqual([])
  const leftProcesses = allHomes.flatMap(processesWithHome)
  for (const pid of leftProcesses) {
    try {
      process.kill(pid, 'SIGKILL') // reported below; killed so that a failure leaks nothing
    } catch {
      // already gone
    }
  }
  expect(leftProcesses, 'no CLI process or tool process is left').toEqual([])
})

/** A fake model serving one fixture file, and a HOME for the CLI, both removed after the test. */
async function setup(fixture: string, vars?: Record<string, string>): Promise<{ model: FakeModel; home: ClaudeHome; options: ClaudeCodeOptions }> {
  const model = await startFakeModel(join(fixtures, fixture), vars ? { vars } : {})
  started.models.push(model)
  const home = makeClaudeHome('claude-code-e2e-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { model, home, options: { executable, env: home.env(model.url) } }
}

/** A sandbox definition whose thread sandbox is destroyed after the test. */
function sandboxFor(id: string, threadId: string, sandboxProvider: SandboxProvider = provider): SandboxDefinition {
  const sandbox = defineSandbox({ id, provider: sandboxProvider })
  started.sandboxes.push({ sandbox, threadId })
  return sandbox
}

const user = (content: string): ModelMessage => ({ role: 'user', content })

/** The workspace directory of a thread's sandbox (`<root>/<id>/workspace`). */
async function workspaceOf(sandbox: SandboxDefinition, threadId: string): Promise<string> {
  const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId, runId: '' }))
  expect(record, `a sandbox is recorded for thread ${threadId}`).not.toBeNull()
  return join(root, record!.providerSandboxId, 'workspace')
}

describe('claude-code adapter with the real CLI', () => {
  it('streams a text turn: session id first, text once, RUN_FINISHED with usage', async () => {
    const { model, options } = await setup('text.json')
    const sandbox = sandboxFor('cc-text', 't-text')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-text', messages: [user('Say hello')] })

    expect(out.error).toBeUndefined()
    const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-text', runId: '' }))
    expect(ofType(out.chunks, 'RUN_STARTED')[0]!.runId, 'the adapter reports the run id withSandbox saw').toBe(record?.latestRunId)
    expect(out.text).toBe('Hello from the fake model. This reply is long enough to arrive in several streamed deltas.')
    const types = out.chunks.map((c) => c.type)
    expect(types[0]).toBe('RUN_STARTED')
    expect(types.at(-1)).toBe('RUN_FINISHED')
    const custom = ofType(out.chunks, 'CUSTOM')
    expect(custom.map((c) => c.name)).toEqual([CLAUDE_CODE_SESSION_EVENT, CLAUDE_CODE_INIT_EVENT])
    expect(custom[1]?.value.tools, 'the init event lists the CLI tools').toContain('Bash')
    expect(out.sessionId).toMatch(/^[0-9a-f-]{36}$/)
    expect(types[1], 'the session id comes right after RUN_STARTED').toBe('CUSTOM')
    expect(types.filter((t) => t.startsWith('TEXT_MESSAGE_'))).toEqual(['TEXT_MESSAGE_START', ...ofType(out.chunks, 'TEXT_MESSAGE_CONTENT').map(() => 'TEXT_MESSAGE_CONTENT'), 'TEXT_MESSAGE_END'])
    expect(ofType(out.chunks, 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(1)
    const finished = ofType(out.chunks, 'RUN_FINISHED')[0]!
    // chat() moves the adapter's finishReason and model into metadata.tanstack.
    expect(finished.metadata?.tanstack).toMatchObject({ finishReason: 'stop', model: 'sonnet' })
    expect(finished.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })
    expect(model.requests()).toHaveLength(1)
    expect(userTexts(model.requests()[0]!)).toEqual(['Say hello'])
  })

  it('creates and then edits a file in the sandbox workspace through the CLI\'s own tools', async () => {
    const { model, options } = await setup('tools.json')
    const sandbox = sandboxFor('cc-tools', 't-tools')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt with a first draft, then change it to the final draft.')] })

    expect(out.error).toBeUndefined()
    const workspace = await workspaceOf(sandbox, 't-tools')
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('final draft\nsecond line "quoted" $HOME\n')

    const starts = ofType(out.chunks, 'TOOL_CALL_START')
    expect(starts.map((c) => [c.toolCallId, c.toolCallName])).toEqual([
      ['toolu_e2e_1_write', 'Write'],
      ['toolu_e2e_2_edit', 'Edit'],
      ['toolu_e2e_3_read', 'Read'],
    ])
    expect(starts.every((c) => c.metadata?.providerExecuted === true)).toBe(true)
    const args = (id: string) => JSON.parse(ofType(out.chunks, 'TOOL_CALL_ARGS').filter((c) => c.toolCallId === id).map((c) => c.delta).join(''))
    expect(args('toolu_e2e_1_write')).toEqual({ file_path: 'notes.txt', content: 'first draft\nsecond line "quoted" $HOME\n' })
    expect(args('toolu_e2e_2_edit')).toEqual({ file_path: 'notes.txt', old_string: 'first draft', new_string: 'final draft' })
    expect(args('toolu_e2e_3_read')).toEqual({ file_path: 'notes.txt' })
    expect(ofType(out.chunks, 'TOOL_CALL_END').map((c) => c.toolCallId)).toEqual(['toolu_e2e_1_write', 'toolu_e2e_2_edit', 'toolu_e2e_3_read'])

    const results = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(results.map((c) => c.toolCallId)).toEqual(['toolu_e2e_1_write', 'toolu_e2e_2_edit', 'toolu_e2e_3_read'])
    expect(results[0]!.content).toMatch(/^File created successfully at: notes\.txt/)
    expect(results[1]!.content).toMatch(/^The file notes\.txt has been updated successfully/)
    expect(results[2]!.content).toBe('1\tfinal draft\n2\tsecond line "quoted" $HOME\n3\t')

    // Each call's END comes before its RESULT, and each RESULT before the next call starts.
    const order = out.chunks.filter((c) => c.type === 'TOOL_CALL_END' || c.type === 'TOOL_CALL_RESULT').map((c) => `${c.type}:${(c as { toolCallId: string }).toolCallId}`)
    expect(order).toEqual(['toolu_e2e_1_write', 'toolu_e2e_2_edit', 'toolu_e2e_3_read'].flatMap((id) => [`TOOL_CALL_END:${id}`, `TOOL_CALL_RESULT:${id}`]))
    expect(out.text).toBe('Created it; now the edit.notes.txt now says final draft.')
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(1)
    expect(model.requests()).toHaveLength(4)
  })

  it('resumes the CLI session on the same thread without re-sending history', async () => {
    const { model, options } = await setup('resume.json')
    const spy = recording(provider, true)
    const sandbox = sandboxFor('cc-resume', 't-resume', spy.provider)
    const adapter = claudeCodeText('sonnet', options)
    const first = await runClaude({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.')] })
    expect(first.error).toBeUndefined()
    expect(first.text).toBe('Noted: pelican.')
    expect(first.sessionId).toBeDefined()

    const history: ModelMessage[] = [user('Remember the word pelican.'), { role: 'assistant', content: first.text }, user('What did I ask first?')]
    const second = await runClaude({ adapter, sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: first.sessionId } })
    expect(second.error).toBeUndefined()
    expect(second.text).toBe('You asked me to remember the word pelican.')
    expect(second.sessionId, 'a resumed run reports the same session').toBe(first.sessionId)

    expect(spy.spawned).toHaveLength(2)
    expect(spy.spawned[0]).not.toContain('--resume')
    expect(spy.spawned[1], 'the id is one --resume=<id> argument').toContain(`--resume=${first.sessionId} `)
    const [, resumed] = model.requests()
    expect(model.requests()).toHaveLength(2)
    // The earlier turn reaches the model only because the CLI loaded it from its session (--resume) ...
    expect(conversationOf(resumed!)).toEqual([
      { role: 'user', text: 'Remember the word pelican.' },
      { role: 'assistant', text: 'Noted: pelican.' },
      { role: 'user', text: 'What did I ask first?' },
    ])
    // ... and the new prompt is the latest message alone, without a transcript preamble.
    expect(userTexts(resumed!).at(-1)).toBe('What did I ask first?')

    // A session this HOME never had: session_not_found with the CLI's reason, no session event, no model request.
    const gone = randomUUID()
    const unknown = await runClaude({ adapter, sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: gone } })
    expect(unknown.error?.code).toBe('session_not_found')
    expect(unknown.error?.message).toContain(`No conversation found with session ID: ${gone}`)
    expect(unknown.error?.message).toContain('leaving sessionId out of modelOptions')
    expect(unknown.sessionId, 'the unknown id is not announced as a session').toBeUndefined()
    // A flag-like id never reaches the CLI.
    const flag = await runClaude({ adapter, sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: '--help' } })
    expect(flag.error?.code).toBe('invalid_session_id')
    expect(spy.spawned, 'the flag-like id started no CLI').toHaveLength(3)
    expect(model.requests()).toHaveLength(2)
  })

  it('turns an API error into RUN_ERROR with the server\'s message', async () => {
    const { options } = await setup('api-error.json')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox: sandboxFor('cc-api-error', 't-api-error'), threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error?.message).toContain('fixture says: the widget count is invalid')
    expect(out.error?.code).toBe('api_error_400')
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(out.text, 'the CLI\'s synthetic error message is not shown as model text').toBe('')
  })

  it('aborts mid-run: the CLI and its tool process are gone and the sandbox is removed', async () => {
    const marker = `300.${process.pid}${Date.now() % 100_000}`
    const { home, options } = await setup('abort.json', { marker })
    const sandbox = sandboxFor('cc-abort', 't-abort')
    const controller = new AbortController()
    let sawToolCall = false
    const run = runClaude({
      adapter: claudeCodeText('sonnet', options),
      sandbox,
      threadId: 't-abort',
      messages: [user('Run the slow job')],
      abortController: controller,
      onChunk: (chunk) => {
        if (chunk.type === 'TOOL_CALL_END') sawToolCall = true
      },
    }).catch((error: unknown) => ({ chunks: [] as StreamChunk[], thrown: error }))
    let slowCommandRan: boolean
    let workspace = ''
    try {
      slowCommandRan = await waitFor(() => sawToolCall && processesMatching(marker).length > 0)
      const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-abort', runId: '' }))
      workspace = record ? join(root, record.providerSandboxId) : ''
    } finally {
      controller.abort() // also when the wait failed, so the run cannot hang on `sleep 300`
    }
    const out = await run
    expect(slowCommandRan, 'the Bash tool started the slow command before the abort').toBe(true)
    expect('thrown' in out ? out.thrown : undefined, 'an abort ends the stream without throwing').toBeUndefined()
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['Bash'])
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT'), 'the run ended before the tool finished').toHaveLength(0)
    const toolGone = await waitFor(() => processesMatching(marker).length === 0)
    expect(toolGone, `no tool process is left: ${processesMatching(marker)}`).toBe(true)
    const cliGone = await waitFor(() => processesWithHome(home.dir).length === 0)
    expect(cliGone, `no CLI process is left: ${processesWithHome(home.dir)}`).toBe(true)
    expect(workspace).not.toBe('')
    expect(await waitFor(() => !existsSync(workspace)), 'the sandbox directory is removed').toBe(true)
  })
})

describe('bad input', () => {
  it('reports a missing CLI as RUN_ERROR telling how to install it', async () => {
    const { options } = await setup('text.json')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', { ...options, executable: '/nonexistent/claude' }), sandbox: sandboxFor('cc-missing', 't-missing'), threadId: 't-missing', messages: [user('Say hello')] })
    expect(out.error?.code).toBe('cli_not_found')
    expect(out.error?.message).toMatch(/claude CLI was not found/)
    expect(out.error?.message).toContain('npm install -g @anthropic-ai/claude-code')
  })

  it('refuses a model name with invalid characters before any run', () => {
    for (const bad of ['sonnet; rm -rf /', 'son net', '$(whoami)', '']) {
      let thrown: unknown
      try {
        claudeCodeText(bad)
      } catch (error) {
        thrown = error
      }
      expect(SandboxConfigError.isInstance(thrown), `claudeCodeText(${JSON.stringify(bad)}) throws SandboxConfigError`).toBe(true)
      expect((thrown as SandboxError).message).toContain('claudeCodeText.model')
    }
  })

  it('reports a model the server rejects as RUN_ERROR naming the model', async () => {
    const { options } = await setup('model-rejected.json')
    const out = await runClaude({ adapter: claudeCodeText('claude-nope-1', options), sandbox: sandboxFor('cc-bad-model', 't-bad-model'), threadId: 't-bad-model', messages: [user('Hello?')] })
    expect(out.error?.message).toContain('claude-nope-1')
    expect(out.error?.code).toBe('api_error_404')
  })

  it("refuses a prompt beyond Claude Code's limit before any sandbox exists, and gives the CLI's own refusal the same code", async () => {
    const { model, options } = await setup('text.json')
    const sandbox = sandboxFor('cc-huge', 't-huge')
    const thrown = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-huge', messages: [user('a'.repeat(3_000_001))] }).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(PromptTooLargeError.isInstance(thrown), String(thrown)).toBe(true)
    expect(thrown).toMatchObject({ code: 'prompt_too_large', reason: 'prompt-too-large', harness: 'claude-code', promptChars: 3_000_001, maxPromptChars: 3_000_000 })
    expect((await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-huge', runId: '' }))) ?? null, 'no sandbox was created').toBeNull()
    expect(readdirSync(root), 'no sandbox folder either').toEqual([])
    // Under our bound but over the CLI's own (about 2.92 million characters on 2.1.332): the CLI refuses it without asking the model.
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-huge', messages: [user('a'.repeat(2_990_000))] })
    expect(out.error).toMatchObject({ code: 'prompt_too_large', message: expect.stringMatching(/Prompt is too long/) })
    expect(model.requests()).toHaveLength(0)
  })

  it.skipIf(process.getuid?.() !== 0)('tells a root user on local-process how to get past the CLI refusing to bypass permissions (needs root: CI runs as root)', async () => {
    const { options } = await setup('text.json')
    const { IS_SANDBOX: _dropped, ...env } = options.env as Record<string, string>
    const out = await runClaude({ adapter: claudeCodeText('sonnet', { ...options, env }), sandbox: sandboxFor('cc-root', 't-root'), threadId: 't-root', messages: [user('Say hello')] })
    expect(out.error?.code).toBe('cli_exit')
    expect(out.error?.message).toMatch(/cannot be used with root\/sudo privileges/)
    expect(out.error?.message).toMatch(/user other than root.*dockerSandbox sets IS_SANDBOX=1.*env: \{ IS_SANDBOX: '1' \}/s)
  })

  it('reports a CLI that exits without a result line, with its exit code and stderr', async () => {
    const { options } = await setup('text.json')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', { ...options, executable: join(fakeBin, 'claude-exits-3') }), sandbox: sandboxFor('cc-exit-3', 't-exit-3'), threadId: 't-exit-3', messages: [user('Say hello')] })
    expect(out.sessionId).toBe('fake-session-exit-3')
    expect(out.error?.code).toBe('cli_exit')
    expect(out.error?.message).toContain('exited with code 3')
    expect(out.error?.message).toContain('simulated crash before any result')
  })

  const nasty = [
    'quoting-probe: She said "hi" & it\'s \'fine\'',
    'line two; touch semicolon-ran.txt',
    '$(touch dollar-ran.txt) `touch backtick-ran.txt` ${HOME} $HOME \\$ \\n %s %%',
    '\ttabbed | cat > pipe-ran.txt && echo > amp-ran.txt',
    'unicode: naïve café 日本語 🚀 \u202ertl\u202c \u00a0nbsp',
    '',
    'trailing spaces   ',
  ].join('\n')

  it.each([
    ['stdin', true],
    ['a prompt file', false],
  ] as const)('passes a prompt with shell metacharacters byte for byte through %s, never to a shell', async (via, stdin) => {
    const { model, options } = await setup('echo.json')
    const threadId = `t-quote-${stdin ? 'stdin' : 'file'}`
    const sandboxProvider = recording(provider, stdin)
    const sandbox = sandboxFor('cc-quote', threadId, sandboxProvider.provider)
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId, messages: [user(nasty)] })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Received.')
    expect(model.requests()).toHaveLength(1)
    expect(userTexts(model.requests()[0]!)).toEqual([nasty])

    const workspace = await workspaceOf(sandbox, threadId)
    expect(readdirSync(workspace), 'no shell ran any part of the prompt').toEqual([])
    expect(sandboxProvider.spawned).toHaveLength(1)
    const [command] = sandboxProvider.spawned
    expect(command, 'the prompt is never part of the command line').not.toContain('quoting-probe')
    const runId = ofType(out.chunks, 'RUN_STARTED')[0]!.runId
    const promptFile = `/tmp/tanstack-claude-code/${runId}.prompt`
    if (via === 'a prompt file') expect(command).toContain(`< ${promptFile}`)
    else expect(command).not.toContain('<')
    expect(existsSync(promptFile), 'no prompt file is left behind').toBe(false)
  })

  it.each([
    ['stdin', true],
    ['a prompt file (written in pieces)', false],
  ] as const)('delivers a 300 KB prompt whole through %s', async (_via, stdin) => {
    const prompt = `${'long prompt line — ünïcode ✓ $(no) `no` \'q\'\n'.repeat(6000)}end`
    const expected = `${Buffer.byteLength(prompt)} ${createHash('sha256').update(prompt).digest('hex')}`
    const threadId = `t-long-${stdin ? 'stdin' : 'file'}`
    const sandboxProvider = recording(provider, stdin)
    const sandbox = sandboxFor('cc-long', threadId, sandboxProvider.provider)
    const out = await runClaude({ adapter: claudeCodeText('sonnet', { executable: join(fakeBin, 'claude-digest-stdin') }), sandbox, threadId, messages: [user(prompt)] })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe(expected)
  })
})
