/**
 * The real `codex` CLI, driven by `codexText` through chat() + withSandbox over
 * the local-process provider, against aimock on 127.0.0.1: text, tools that
 * change the workspace, resume, errors, abort, chat() tools over the bridge,
 * and bad input. Each test owns its fake model and CLI HOME and removes them;
 * afterAll checks that no sandbox directory, HOME or process of ours is left.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { toolDefinition, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { CODEX_ERROR_EVENT, CODEX_SESSION_EVENT, codexText, type CodexOptions } from '@tanstack/ai-codex'
import { defineSandbox, SandboxConfigError, SandboxError, TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT, type SandboxDefinition, type SandboxProvider } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { allTexts, codexBinary, FAKE_MODEL, makeCodexHome, startFakeModel, userTexts, type CodexHome, type FakeModel } from '../src/aimock.js'
import { ofType, processesMatching, processesWithHome, recording, runCodex, waitFor } from './helpers/run-codex.js'

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'codex-e2e-'))
const provider = localProcessSandbox({ root })
const executable = codexBinary()

/** Everything a test started, removed in afterEach. */
const started: { models: FakeModel[]; homes: CodexHome[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], sandboxes: [] }
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

/** A fake model serving one fixture file, and a HOME whose config.toml points Codex at it, both removed after the test. */
async function setup(fixture: string, vars?: Record<string, string>): Promise<{ model: FakeModel; home: CodexHome; options: CodexOptions }> {
  const model = await startFakeModel(join(fixtures, fixture), vars ? { vars } : {})
  started.models.push(model)
  const home = makeCodexHome(model.url, 'codex-e2e-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { model, home, options: { executable, env: home.env() } }
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

describe('codex adapter with the real CLI', () => {
  it('streams a text turn: session id first, the message, RUN_FINISHED with usage', async () => {
    const { model, options } = await setup('text.json')
    const sandbox = sandboxFor('cx-text', 't-text')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-text', messages: [user('Say hello')], systemPrompts: ['Answer like a pirate. SYSTEM-PROMPT-MARKER'] })

    expect(out.error).toBeUndefined()
    const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-text', runId: '' }))
    expect(ofType(out.chunks, 'RUN_STARTED')[0]!.runId, 'the adapter reports the run id withSandbox saw').toBe(record?.latestRunId)
    expect(out.text).toBe('Hello from the fake model. Codex reports a whole message at once.')
    const types = out.chunks.map((c) => c.type)
    expect(types[0]).toBe('RUN_STARTED')
    expect(types[1], 'the session id comes right after RUN_STARTED').toBe('CUSTOM')
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(ofType(out.chunks, 'CUSTOM').map((c) => c.name)).toEqual([CODEX_SESSION_EVENT])
    expect(out.sessionId).toMatch(/^[0-9a-f-]{36}$/)
    const finished = ofType(out.chunks, 'RUN_FINISHED')[0]!
    expect(finished.metadata?.tanstack).toMatchObject({ finishReason: 'stop', model: FAKE_MODEL })
    expect(finished.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })
    expect(model.requests()).toHaveLength(1)
    expect(userTexts(model.requests()[0]!)).toEqual(['Say hello'])
    expect(allTexts(model.requests()[0]!), 'chat() system prompts reach the model as developer instructions').toContain('SYSTEM-PROMPT-MARKER')
  })

  it("creates and then patches a file in the sandbox workspace through the CLI's own tools, with the prompt from a file", async () => {
    const { model, options } = await setup('tools.json')
    const spy = recording(provider, false) // no writable stdin: the prompt goes through a file redirect
    const sandbox = sandboxFor('cx-tools', 't-tools', spy.provider)
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt with a first draft, then change it to the final draft.')] })

    expect(out.error).toBeUndefined()
    const promptFile = /^\{ rm -f (\/tmp\/tanstack-codex\/[\w.-]+\.prompt); .* -; \} < \1$/.exec(spy.spawned[0]!)?.[1]
    expect(promptFile, spy.spawned[0]).toBeDefined()
    expect(existsSync(promptFile!), 'the prompt file is gone').toBe(false)
    const workspace = await workspaceOf(sandbox, 't-tools')
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('final draft\nsecond line "quoted" $HOME\n')

    const starts = ofType(out.chunks, 'TOOL_CALL_START')
    expect(starts.map((c) => c.toolCallName)).toEqual(['exec_command', 'apply_patch', 'exec_command'])
    expect(starts.every((c) => c.metadata?.providerExecuted === true)).toBe(true)
    const ends = ofType(out.chunks, 'TOOL_CALL_END')
    expect(ends[0]!.input.command).toMatch(/^\/bin\/bash -lc .*printf 'first draft.*> notes\.txt/)
    expect(ends[1]!.input).toEqual({ changes: [{ path: join(workspace, 'notes.txt'), kind: 'update' }] })
    expect(ends[2]!.input).toEqual({ command: "/bin/bash -lc 'cat notes.txt'" })
    const results = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(results.map((c) => c.toolCallId)).toEqual(starts.map((c) => c.toolCallId))
    expect(results.map((c) => c.content)).toEqual(['', `update ${join(workspace, 'notes.txt')}`, 'final draft\nsecond line "quoted" $HOME\n'])
    // Each call's END comes before its RESULT, and each RESULT before the next call starts.
    const order = out.chunks.filter((c) => c.type === 'TOOL_CALL_START' || c.type === 'TOOL_CALL_END' || c.type === 'TOOL_CALL_RESULT').map((c) => c.type)
    expect(order).toEqual(['TOOL_CALL_START', 'TOOL_CALL_END', 'TOOL_CALL_RESULT', 'TOOL_CALL_START', 'TOOL_CALL_END', 'TOOL_CALL_RESULT', 'TOOL_CALL_START', 'TOOL_CALL_END', 'TOOL_CALL_RESULT'])
    expect(out.text).toBe('Created it; now the edit.notes.txt now says final draft.')
    expect(model.requests()).toHaveLength(4)
  })

  it('resumes the Codex thread without re-sending history', async () => {
    const { model, options } = await setup('resume.json')
    const spy = recording(provider, true)
    const sandbox = sandboxFor('cx-resume', 't-resume', spy.provider)
    const adapter = codexText(FAKE_MODEL, options)
    const first = await runCodex({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.')] })
    expect(first.error).toBeUndefined()
    expect(first.text).toBe('Noted: pelican.')
    expect(first.sessionId).toBeDefined()

    const history: ModelMessage[] = [user('Remember the word pelican.'), { role: 'assistant', content: first.text }, user('What did I ask first?')]
    const second = await runCodex({ adapter, sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: first.sessionId } })
    expect(second.error).toBeUndefined()
    expect(second.text).toBe('You asked me to remember the word pelican.')
    expect(second.sessionId, 'a resumed run reports the same thread').toBe(first.sessionId)

    expect(spy.spawned).toHaveLength(2)
    expect(spy.spawned[0]).not.toContain(' resume ')
    expect(spy.spawned[1]).toContain(`exec resume --json`)
    expect(spy.spawned[1]).toContain(` ${first.sessionId} -`)
    expect(model.requests()).toHaveLength(2)
    const resumed = model.requests()[1]!
    // The earlier turn reaches the model only because the CLI loaded its thread, and the new prompt is the latest message alone.
    expect(userTexts(resumed)).toEqual(['Remember the word pelican.', 'What did I ask first?'])
    expect(allTexts(resumed)).toContain('Noted: pelican.')
    expect(allTexts(resumed)).not.toContain('Earlier in this conversation')
  })

  it('refuses to continue when Codex does not know the thread to resume (instead of a silent new thread)', async () => {
    const { options } = await setup('resume.json')
    const sandbox = sandboxFor('cx-resume-unknown', 't-resume-unknown')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-resume-unknown', messages: [user('Remember the word pelican.')], modelOptions: { sessionId: 'abc123' } })
    expect(out.error?.code).toBe('session_not_found')
    expect(out.error?.message).toContain('leaving sessionId out of modelOptions')
    expect(out.text, 'nothing from a fresh thread is presented as the resumed conversation').toBe('')
  })

  it('sends earlier turns as a preamble when there is no thread to resume', async () => {
    const { model, options } = await setup('resume.json')
    const sandbox = sandboxFor('cx-preamble', 't-preamble')
    const history: ModelMessage[] = [user('Remember the word pelican.'), { role: 'assistant', content: 'Noted: pelican.' }, user('What did I ask first?')]
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-preamble', messages: history })
    expect(out.error).toBeUndefined()
    expect(userTexts(model.requests()[0]!)).toEqual(['Earlier in this conversation:\n\nUser: Remember the word pelican.\n\nAssistant: Noted: pelican.\n\nCurrent request:\n\nWhat did I ask first?'])
  })

  it("turns an API error into RUN_ERROR with the server's message", async () => {
    const { options } = await setup('api-error.json')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox: sandboxFor('cx-api-error', 't-api-error'), threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error).toEqual({ message: 'fixture says: the widget count is invalid', code: 'api_error' })
    expect(ofType(out.chunks, 'CUSTOM').map((c) => c.name)).toEqual([CODEX_SESSION_EVENT, CODEX_ERROR_EVENT])
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(out.text).toBe('')
  })

  it('runs chat() tools on the host through the bridge: the agent calls mcp__tanstack__<tool>, the stream names the app\'s tool', async () => {
    const { model, options } = await setup('mcp.json')
    const calls: unknown[] = []
    const weather = toolDefinition({ name: 'get_weather', description: 'The weather in a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }).server(async (args) => {
      calls.push(args)
      return `Sunny in ${(args as { city: string }).city}, 21 °C.`
    })
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox: sandboxFor('cx-bridge', 't-bridge'), threadId: 't-bridge', messages: [user('Weather in Paris?')], tools: [weather] })

    expect(out.error).toBeUndefined()
    expect(calls, 'the tool ran on the host').toEqual([{ city: 'Paris' }])
    const start = ofType(out.chunks, 'TOOL_CALL_START')
    expect(start.map((c) => c.toolCallName), "the app's tool name").toEqual(['get_weather'])
    expect(ofType(out.chunks, 'TOOL_CALL_END')[0]!.input).toEqual({ city: 'Paris' })
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT')[0]!.content).toBe('Sunny in Paris, 21 °C.')
    const custom = ofType(out.chunks, 'CUSTOM')
    expect(custom.find((c) => c.name === TOOL_BRIDGE_CALL_EVENT)?.value).toMatchObject({ toolName: 'get_weather', input: { city: 'Paris' } })
    expect(custom.find((c) => c.name === TOOL_BRIDGE_RESULT_EVENT)?.value).toMatchObject({ toolName: 'get_weather', isError: false, content: 'Sunny in Paris, 21 °C.' })
    expect(out.text).toBe('It is sunny in Paris.')
    expect(model.requests()).toHaveLength(2)
  })

  it('aborts mid-run: the CLI and its tool process are gone and the sandbox is removed', async () => {
    const marker = `300.${process.pid}${Date.now() % 100_000}`
    const { home, options } = await setup('abort.json', { marker })
    const sandbox = sandboxFor('cx-abort', 't-abort')
    const controller = new AbortController()
    let sawToolCall = false
    const run = runCodex({
      adapter: codexText(FAKE_MODEL, options),
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
    expect(slowCommandRan, 'the shell tool started the slow command before the abort').toBe(true)
    expect('thrown' in out ? out.thrown : undefined, 'an abort ends the stream without throwing').toBeUndefined()
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['exec_command'])
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT'), 'the run ended before the tool finished').toHaveLength(0)
    expect(await waitFor(() => processesMatching(marker).length === 0), `no tool process is left: ${processesMatching(marker)}`).toBe(true)
    expect(await waitFor(() => processesWithHome(home.dir).length === 0), `no CLI process is left: ${processesWithHome(home.dir)}`).toBe(true)
    expect(workspace).not.toBe('')
    expect(await waitFor(() => !existsSync(workspace)), 'the sandbox directory is removed').toBe(true)
  })
})

describe('bad input', () => {
  it('reports a missing CLI as RUN_ERROR telling how to install it', async () => {
    const { options } = await setup('text.json')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, { ...options, executable: '/nonexistent/codex' }), sandbox: sandboxFor('cx-missing', 't-missing'), threadId: 't-missing', messages: [user('Say hello')] })
    expect(out.error?.code).toBe('cli_not_found')
    expect(out.error?.message).toMatch(/codex CLI was not found/)
    expect(out.error?.message).toContain('npm install -g @openai/codex')
  })

  it('refuses a model name or option with invalid characters before any run', () => {
    for (const [bad, field] of [[() => codexText('gpt; rm -rf /'), 'codexText.model'], [() => codexText(''), 'codexText.model'], [() => codexText('gpt-5.5', { config: { 'bad key': 1 } }), 'codexText.options.config'], [() => codexText('gpt-5.5', { sandboxMode: 'yolo' as never }), 'codexText.options.sandboxMode']] as const) {
      let thrown: unknown
      try {
        bad()
      } catch (error) {
        thrown = error
      }
      expect(SandboxConfigError.isInstance(thrown), field).toBe(true)
      expect((thrown as SandboxError).message).toContain(field)
    }
  })

  it('reports a session id that is not one, and a thread the CLI does not know', async () => {
    const { options } = await setup('resume.json')
    const sandbox = sandboxFor('cx-bad-session', 't-bad-session')
    const adapter = codexText(FAKE_MODEL, options)
    const flag = await runCodex({ adapter, sandbox, threadId: 't-bad-session', messages: [user('What did I ask first?')], modelOptions: { sessionId: '--dangerously-bypass' } })
    expect(flag.error?.code).toBe('invalid_session_id')
    // A well-formed id the CLI has no thread for; RUST_BACKTRACE=1 makes it print a backtrace, which must not reach the message.
    const gone = randomUUID()
    const withBacktrace = codexText(FAKE_MODEL, { ...options, env: { ...options.env, RUST_BACKTRACE: '1' } })
    const unknown = await runCodex({ adapter: withBacktrace, sandbox, threadId: 't-bad-session', messages: [user('What did I ask first?')], modelOptions: { sessionId: gone } })
    expect(unknown.error?.code).toBe('session_not_found')
    expect(unknown.error?.message).toBe(`Codex could not resume the thread: no rollout found for thread id ${gone}. The thread is gone (threads live under $CODEX_HOME, default $HOME/.codex, inside the sandbox that ran them); start a new thread by leaving sessionId out of modelOptions.`)
  })

  it('reports an empty prompt without starting the CLI', async () => {
    const { model, options } = await setup('text.json')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox: sandboxFor('cx-empty', 't-empty'), threadId: 't-empty', messages: [user('   ')] })
    expect(out.error?.code).toBe('no_prompt')
    expect(model.requests()).toHaveLength(0)
  })

  it('stops a run at timeoutMs with RUN_ERROR timeout', async () => {
    const marker = `301.${process.pid}${Date.now() % 100_000}`
    const { home, options } = await setup('abort.json', { marker })
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, { ...options, timeoutMs: 4000 }), sandbox: sandboxFor('cx-timeout', 't-timeout'), threadId: 't-timeout', messages: [user('Run the slow job')] })
    expect(out.error?.code).toBe('timeout')
    expect(await waitFor(() => processesMatching(marker).length === 0 && processesWithHome(home.dir).length === 0), 'the CLI and its tool are gone').toBe(true)
  })
})
