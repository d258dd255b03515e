/**
 * The real `opencode` CLI, driven by `opencodeText` through chat() +
 * withSandbox over the local-process provider, against aimock on 127.0.0.1:
 * a text turn (with chat system prompts), a tool turn that writes a file,
 * resume, an API error, the policy enforced by the CLI, a chat() tool bridged
 * over MCP, and bad input. OpenCode takes seconds per turn, so each test runs
 * as few CLI turns as it can. Each test owns its fake model and CLI HOME and
 * removes them; afterAll checks that no sandbox directory, HOME or process
 * of ours is left.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { toolDefinition, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { OPENCODE_PERMISSION_DENIED_EVENT, OPENCODE_SESSION_EVENT, opencodeText, type OpencodeOptions } from '@tanstack/ai-opencode'
import { createSecrets, defineSandbox, defineSandboxPolicy, defineWorkspace, SandboxConfigError, type SandboxDefinition, type SandboxPolicyInput, type SandboxProvider } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { conversationOf, FAKE_MODEL, makeOpencodeHome, opencodeBinary, providerConfig, startFakeModel, systemTextOf, toolNamesOf, type FakeModel, type OpencodeHome } from '../src/aimock.js'
import { ofType, processesMatching, processesWithHome, recording, runOpencode, waitFor } from './helpers/run-opencode.js'

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const fakeBin = fileURLToPath(new URL('./fixtures/bin/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'opencode-e2e-'))
const provider = localProcessSandbox({ root })
const executable = opencodeBinary()
/** A hang guard for one CLI turn (seconds on 2 cores), not a timing claim. */
const TURN_MS = 90_000

/** Everything a test started, removed in afterEach. */
const started: { models: FakeModel[]; homes: OpencodeHome[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], sandboxes: [] }
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
  const runFiles = existsSync('/tmp/tanstack-opencode') ? readdirSync('/tmp/tanstack-opencode') : []
  expect(runFiles, 'every prompt and instruction file of a run is removed').toEqual([])
})

/** A fake model serving one fixture file, and a HOME for the CLI, both removed after the test. */
async function setup(fixture: string, vars?: Record<string, string>): Promise<{ model: FakeModel; home: OpencodeHome; options: OpencodeOptions }> {
  const model = await startFakeModel(join(fixtures, fixture), vars ? { vars } : {})
  started.models.push(model)
  const home = makeOpencodeHome('opencode-e2e-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { model, home, options: { executable, env: home.env(), config: providerConfig(model.url), timeoutMs: TURN_MS } }
}

/** A sandbox definition whose thread sandbox is destroyed after the test. */
function sandboxFor(id: string, threadId: string, options: { provider?: SandboxProvider; policy?: SandboxPolicyInput } = {}): SandboxDefinition {
  const sandbox = defineSandbox({ id, provider: options.provider ?? provider, ...(options.policy ? { policy: defineSandboxPolicy(options.policy) } : {}) })
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

describe('opencode adapter with the real CLI', () => {
  it('streams a text turn: session id first, the text, RUN_FINISHED with usage; chat system prompts reach the model', async () => {
    const { model, home, options } = await setup('text.json')
    const sandbox = sandboxFor('oc-text', 't-text')
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-text', messages: [user('Say hello')], systemPrompts: ['Answer like a pirate. MARKER-SYSTEM-7'] })

    expect(out.error).toBeUndefined()
    const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-text', runId: '' }))
    const runId = ofType(out.chunks, 'RUN_STARTED')[0]!.runId as string
    expect(runId, 'the adapter reports the run id withSandbox saw').toBe(record?.latestRunId)
    expect(out.chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'])
    expect(ofType(out.chunks, 'CUSTOM')[0]?.name).toBe(OPENCODE_SESSION_EVENT)
    expect(out.sessionId).toMatch(/^ses_[A-Za-z0-9]+$/)
    expect(out.text).toBe('Hello from the fake model. OpenCode prints each text part whole, once it is complete.')
    const finished = ofType(out.chunks, 'RUN_FINISHED')[0]!
    expect(finished.metadata?.tanstack).toMatchObject({ finishReason: 'stop', model: FAKE_MODEL })
    expect(finished.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })

    // One model request: the adapter names the session, so OpenCode asks for no title.
    expect(model.requests()).toHaveLength(1)
    const [request] = model.requests()
    expect(conversationOf(request!)).toEqual([{ role: 'user', text: 'Say hello' }])
    expect(systemTextOf(request!), 'chat({ systemPrompts }) arrive as an OpenCode instruction file').toContain('MARKER-SYSTEM-7')
    expect(existsSync(`/tmp/tanstack-opencode/${runId}.system.md`), 'the instruction file is removed after the run').toBe(false)
    expect(readdirSync(join(home.dir, '.config', 'opencode', 'node_modules')), 'OpenCode installed nothing from the npm registry').toEqual([])
  }, 2 * TURN_MS)

  it("creates a file in the sandbox workspace through the CLI's own bash tool, and reads it back", async () => {
    const { model, options } = await setup('tools.json')
    const sandbox = sandboxFor('oc-tools', 't-tools')
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt with a first draft, then read it back.')] })

    expect(out.error).toBeUndefined()
    const workspace = await workspaceOf(sandbox, 't-tools')
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('first draft\nsecond line "quoted" $HOME — ünï\n')

    const starts = ofType(out.chunks, 'TOOL_CALL_START')
    expect(starts.map((c) => [c.toolCallId, c.toolCallName])).toEqual([
      ['call_e2e_1_bash', 'bash'],
      ['call_e2e_2_read', 'read'],
    ])
    expect(starts.every((c) => c.metadata?.providerExecuted === true)).toBe(true)
    const args = (id: string) => JSON.parse(ofType(out.chunks, 'TOOL_CALL_ARGS').filter((c) => c.toolCallId === id).map((c) => c.delta).join(''))
    expect(args('call_e2e_1_bash')).toEqual({ command: "printf 'first draft\\nsecond line \"quoted\" $HOME — ünï\\n' > notes.txt && echo created", description: 'Create notes.txt' })
    expect(args('call_e2e_2_read')).toEqual({ filePath: 'notes.txt' })
    const results = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(results.map((c) => c.toolCallId)).toEqual(['call_e2e_1_bash', 'call_e2e_2_read'])
    expect(results[0]!.content).toBe('created\n')
    expect(results[1]!.content).toContain(`<path>${workspace}/notes.txt</path>`)
    expect(results[1]!.content).toContain('1: first draft\n2: second line "quoted" $HOME — ünï')
    const order = out.chunks.filter((c) => c.type === 'TOOL_CALL_END' || c.type === 'TOOL_CALL_RESULT').map((c) => `${c.type}:${(c as { toolCallId: string }).toolCallId}`)
    expect(order).toEqual(['call_e2e_1_bash', 'call_e2e_2_read'].flatMap((id) => [`TOOL_CALL_END:${id}`, `TOOL_CALL_RESULT:${id}`]))
    expect(out.text).toBe('Created it; now I read it back.notes.txt holds the first draft.')
    expect(ofType(out.chunks, 'RUN_FINISHED')[0]!.usage).toMatchObject({ promptTokens: 30 + 40 + 64, completionTokens: 11 + 12 + 9 })
    expect(model.requests()).toHaveLength(3)
  }, 2 * TURN_MS)

  it('resumes the session on the same thread without re-sending history, the prompt through a file', async () => {
    const { model, options } = await setup('resume.json')
    // No writable stdin: the adapter feeds the prompt through a file redirect.
    const spy = recording(provider, false)
    const sandbox = sandboxFor('oc-resume', 't-resume', { provider: spy.provider })
    const adapter = opencodeText(FAKE_MODEL, options)
    const first = await runOpencode({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.')] })
    expect(first.error).toBeUndefined()
    expect(first.text).toBe('Noted: pelican.')
    expect(first.sessionId).toBeDefined()

    const history: ModelMessage[] = [user('Remember the word pelican.'), { role: 'assistant', content: first.text }, user('What did I ask first?')]
    const second = await runOpencode({ adapter, sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: first.sessionId } })
    expect(second.error).toBeUndefined()
    expect(second.text).toBe('You asked me to remember the word pelican.')
    expect(second.sessionId, 'a resumed run reports the same session').toBe(first.sessionId)

    expect(spy.spawned).toHaveLength(2)
    expect(spy.spawned[0]).not.toContain('--session')
    expect(spy.spawned[0]).toMatch(/^\{ rm -f \/tmp\/tanstack-opencode\/[\w.-]+\.prompt; /)
    expect(spy.spawned[1]).toContain(`--session ${first.sessionId}`)
    expect(spy.spawned.join('\n'), 'no prompt text in any command line').not.toContain('pelican')
    const [, resumed] = model.requests()
    expect(model.requests()).toHaveLength(2)
    // The earlier turn reaches the model only because the CLI loaded it from its session, and the new prompt has no preamble.
    expect(conversationOf(resumed!)).toEqual([
      { role: 'user', text: 'Remember the word pelican.' },
      { role: 'assistant', text: 'Noted: pelican.' },
      { role: 'user', text: 'What did I ask first?' },
    ])
  }, 3 * TURN_MS)

  it("turns an API error into RUN_ERROR with the server's message and status", async () => {
    const { options } = await setup('api-error.json')
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox: sandboxFor('oc-api-error', 't-api-error'), threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error).toEqual({ message: 'fixture says: the widget count is invalid', code: 'api_error_400' })
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(out.chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'RUN_ERROR'])
  }, 2 * TURN_MS)

  it('enforces the sandbox policy inside the CLI: a denied command is refused, an allowed one runs', async () => {
    const { options } = await setup('policy.json')
    const sandbox = sandboxFor('oc-policy', 't-policy', { policy: { default: 'allow', commands: { deny: ['git push *'] } } })
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-policy', messages: [user('Push the branch, then write the status.')] })
    expect(out.error).toBeUndefined()
    const denied = ofType(out.chunks, 'CUSTOM').filter((c) => c.name === OPENCODE_PERMISSION_DENIED_EVENT)
    expect(denied.map((c) => c.value)).toEqual([{ toolCallId: 'call_e2e_policy_1_push', toolName: 'bash', input: { command: 'git push origin main', description: 'Push' }, reason: 'rule' }])
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT')[0]!.content).toContain('"pattern":"git push *","action":"deny"')
    expect(readFileSync(join(await workspaceOf(sandbox, 't-policy'), 'status.txt'), 'utf8')).toBe('status-ok\n')
  }, 2 * TURN_MS)

  it('bridges a chat() tool into the agent over MCP: it runs on the host and its result reaches the model', async () => {
    const { model, options } = await setup('bridge.json')
    const calls: unknown[] = []
    const getWeather = toolDefinition({ name: 'get_weather', description: 'The weather in a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }).server(async (args) => {
      calls.push(args)
      return { city: (args as { city: string }).city, sky: 'sunny' }
    })
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox: sandboxFor('oc-bridge', 't-bridge'), threadId: 't-bridge', messages: [user('Weather in Paris?')], tools: [getWeather] })
    expect(out.error).toBeUndefined()
    expect(calls, "the tool's own execute() ran on the host").toEqual([{ city: 'Paris' }])
    expect(toolNamesOf(model.requests()[0]!)).toContain('tanstack_get_weather')
    const start = ofType(out.chunks, 'TOOL_CALL_START').find((c) => c.toolCallName === 'get_weather') // the app's name, not OpenCode's tanstack_get_weather
    expect(start?.toolCallId).toBe('call_e2e_weather')
    const result = ofType(out.chunks, 'TOOL_CALL_RESULT').find((c) => c.toolCallId === 'call_e2e_weather')
    expect(JSON.parse(result!.content as string)).toEqual({ city: 'Paris', sky: 'sunny' })
    expect(ofType(out.chunks, 'CUSTOM').map((c) => c.name), 'live bridge events are spliced into the stream').toEqual(expect.arrayContaining(['tool-bridge.call', 'tool-bridge.result']))
    expect(out.text).toBe('It is sunny in Paris.')
  }, 2 * TURN_MS)

  it('aborts mid-run: the CLI and the command its bash tool started are gone, and so is the sandbox', async () => {
    const marker = `300.${process.pid}${Date.now() % 100_000}`
    const { home, options } = await setup('abort.json', { marker })
    const sandbox = sandboxFor('oc-abort', 't-abort')
    const controller = new AbortController()
    const run = runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-abort', messages: [user('Run the slow job')], abortController: controller }).catch((error: unknown) => ({ chunks: [] as StreamChunk[], thrown: error }))
    let slowCommandRan: boolean
    let workspace = ''
    try {
      // OpenCode prints a tool only once it finished, so the running command is found by its marker.
      slowCommandRan = await waitFor(() => processesMatching(marker).length > 0, TURN_MS)
      const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-abort', runId: '' }))
      workspace = record ? join(root, record.providerSandboxId) : ''
    } finally {
      controller.abort() // also when the wait failed, so the run cannot hang on `sleep 300`
    }
    const out = await run
    expect(slowCommandRan, 'the bash tool started the slow command before the abort').toBe(true)
    expect('thrown' in out ? out.thrown : undefined, 'an abort ends the stream without throwing').toBeUndefined()
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT'), 'the run ended before the tool finished').toHaveLength(0)
    expect(await waitFor(() => processesMatching(marker).length === 0), `no tool process is left: ${processesMatching(marker)}`).toBe(true)
    expect(await waitFor(() => processesWithHome(home.dir).length === 0), `no CLI process is left: ${processesWithHome(home.dir)}`).toBe(true)
    expect(workspace).not.toBe('')
    expect(await waitFor(() => !existsSync(workspace)), 'the sandbox directory is removed').toBe(true)
  }, 2 * TURN_MS)
})

describe('bad input', () => {
  it('reports a missing CLI as RUN_ERROR telling how to install it', async () => {
    const { options } = await setup('text.json')
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, { ...options, executable: '/nonexistent/opencode' }), sandbox: sandboxFor('oc-missing', 't-missing'), threadId: 't-missing', messages: [user('Say hello')] })
    expect(out.error?.code).toBe('cli_not_found')
    expect(out.error?.message).toMatch(/opencode CLI was not found/)
    expect(out.error?.message).toContain('npm install -g opencode-ai')
  })

  it('reports a session the CLI does not have as session_not_found, and refuses a malformed id before any run', async () => {
    const { model, options } = await setup('text.json')
    const sandbox = sandboxFor('oc-bad-session', 't-bad-session')
    const adapter = opencodeText(FAKE_MODEL, options)
    const unknown = await runOpencode({ adapter, sandbox, threadId: 't-bad-session', messages: [user('Say hello')], modelOptions: { sessionId: 'ses_doesnotexist' } })
    expect(unknown.error?.code).toBe('session_not_found')
    expect(unknown.error?.message).toContain('session ses_doesnotexist')
    expect(unknown.error?.message).toContain('leaving sessionId out of modelOptions')
    const malformed = await runOpencode({ adapter, sandbox, threadId: 't-bad-session', messages: [user('Say hello')], modelOptions: { sessionId: '--help' } })
    expect(malformed.error?.code).toBe('invalid_session_id')
    expect(model.requests()).toHaveLength(0)
  }, 2 * TURN_MS)

  it('redacts a forwarded provider key the CLI echoes into its error', async () => {
    const key = `sk-ant-leak-${process.pid}-${Date.now()}`
    const sandbox = defineSandbox({ id: 'oc-leak', provider, workspace: defineWorkspace({ secrets: createSecrets({ ANTHROPIC_API_KEY: key }) }) })
    started.sandboxes.push({ sandbox, threadId: 't-leak' })
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, { executable: join(fakeBin, 'opencode-leaks-key') }), sandbox, threadId: 't-leak', messages: [user('Say hello')] })
    expect(out.error?.code).toBe('cli_exit')
    expect(out.error?.message).toContain('the provider refused key [secret ANTHROPIC_API_KEY]')
    expect(JSON.stringify(out.chunks)).not.toContain(key)
  })

  it('stops a run that outlives timeoutMs: RUN_ERROR timeout, and the CLI is gone', async () => {
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, { executable: join(fakeBin, 'opencode-hangs'), timeoutMs: 1500 }), sandbox: sandboxFor('oc-timeout', 't-timeout'), threadId: 't-timeout', messages: [user('Say hello')] })
    expect(out.sessionId).toBe('ses_fake2')
    expect(out.error?.code).toBe('timeout')
    expect(await waitFor(() => processesMatching('sleep 300.7171').length === 0), 'the hanging CLI was killed').toBe(true)
  })

  it('refuses a model that is not provider/model, and bad options, before any run', () => {
    for (const [model, options] of [['claude-sonnet-4-5', {}], ['anthropic/x; rm -rf /', {}], ['', {}], [FAKE_MODEL, { agent: '--auto' }], [FAKE_MODEL, { permission: { bash: 'sometimes' } }]] as const) {
      let thrown: unknown
      try {
        opencodeText(model, options as never)
      } catch (error) {
        thrown = error
      }
      expect(SandboxConfigError.isInstance(thrown), `opencodeText(${JSON.stringify(model)}, ${JSON.stringify(options)}) throws SandboxConfigError`).toBe(true)
    }
  })
})
