/**
 * `grokBuildText` through chat() + withSandbox over the local-process
 * provider, driving the fake Grok Build agent (the SDK's agent side, bundled
 * into one file; the real CLI cannot be installed here) found at
 * `$HOME/.grok/bin/grok`: text, a tool turn that creates a file (under the
 * approve flag, and with permission requests answered from the policy),
 * resume through ACP session/load, an API error, missing credentials, abort,
 * a missing CLI, a provider without writable stdin, host tools over MCP, and
 * the workspace projection. Each test owns its HOME and sandbox and removes
 * them; afterAll checks that no sandbox directory, HOME or process is left.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import type { ModelMessage, StreamChunk } from '@tanstack/ai'
import { GROK_BUILD_INIT_EVENT, GROK_BUILD_PERMISSION_EVENT, GROK_BUILD_SESSION_EVENT, grokBuildText, type GrokAcpTranscriptEntry, type GrokBuildOptions } from '@tanstack/ai-grok-build'
import { agentSkill, createSecrets, defineSandbox, defineSandboxPolicy, defineWorkspace, mcpSkill, bearer, TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT, type SandboxDefinition, type SandboxPolicyInput, type SandboxProvider, type ResolvedWorkspace } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { ensureFakeAgent } from '../src/build-fake.js'
import { makeGrokHome, type GrokHome } from '../src/grok-home.js'
import { custom, ofType, processesMatching, processesWithEnv, runGrok, waitFor, withoutStdin } from './helpers/run-grok.js'

const fake = await ensureFakeAgent()
const root = mkdtempSync(join(tmpdir(), 'grok-build-e2e-'))
const provider = localProcessSandbox({ root })

const started: { homes: GrokHome[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { homes: [], sandboxes: [] }
const allHomes: string[] = []

afterEach(async () => {
  for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  for (const home of started.homes.splice(0)) home.cleanup()
})

afterAll(() => {
  const leftDirs = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(leftDirs, 'every sandbox directory is removed').toEqual([])
  expect(allHomes.filter((dir) => existsSync(dir)), 'every HOME is removed').toEqual([])
  const left = allHomes.flatMap((home) => processesWithEnv(`HOME=${home}`))
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL') // reported below; killed so that a failure leaks nothing
    } catch {
      // already gone
    }
  }
  expect(left, 'no agent process or tool process is left').toEqual([])
})

/** A HOME with the fake CLI installed, removed after the test. */
function setup(options: { apiKey?: boolean } = {}): { home: GrokHome; options: GrokBuildOptions } {
  const home = makeGrokHome(fake, 'grok-e2e-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { home, options: { env: home.env(options) } }
}

/** A sandbox definition whose thread sandbox is destroyed after the test. */
function sandboxFor(id: string, threadId: string, extra: { policy?: SandboxPolicyInput; provider?: SandboxProvider; workspace?: ResolvedWorkspace } = {}): SandboxDefinition {
  const sandbox = defineSandbox({ id, provider: extra.provider ?? provider, ...(extra.policy ? { policy: defineSandboxPolicy(extra.policy) } : {}), ...(extra.workspace ? { workspace: extra.workspace } : {}) })
  started.sandboxes.push({ sandbox, threadId })
  return sandbox
}

async function workspaceOf(sandbox: SandboxDefinition, threadId: string): Promise<string> {
  const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId, runId: '' }))
  expect(record, `a sandbox is recorded for thread ${threadId}`).not.toBeNull()
  return join(root, record!.providerSandboxId, 'workspace')
}

const user = (content: string): ModelMessage => ({ role: 'user', content })

describe('grok-build adapter with the fake ACP agent (local-process)', () => {
  it('streams a text turn: init and session id first, text in several deltas, RUN_FINISHED with usage', async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-text', 't-text')
    const wire: GrokAcpTranscriptEntry[] = []
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', { ...options, onAcpMessage: (e) => wire.push(e) }), sandbox, threadId: 't-text', messages: [user('Say hello')] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Hello from the fake Grok agent. This reply is long enough to arrive in several chunks — über “quoted”.')
    const types = out.chunks.map((c) => c.type)
    expect(types[0]).toBe('RUN_STARTED')
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(ofType(out.chunks, 'CUSTOM').filter((c) => c.name.startsWith('grok-build.')).map((c) => c.name)).toEqual([GROK_BUILD_INIT_EVENT, GROK_BUILD_SESSION_EVENT])
    expect(custom(out.chunks, GROK_BUILD_INIT_EVENT)[0]!.value).toEqual({ agent: 'fake-grok', version: '0.1.0-fake', protocolVersion: 1, loadSession: true, mcpHttp: true })
    expect(ofType(out.chunks, 'TEXT_MESSAGE_CONTENT')).toHaveLength(3)
    expect(ofType(out.chunks, 'RUN_FINISHED')[0]!.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })
    // The default policy allows everything: the approve flag is passed and the model flag reaches the CLI.
    const agentArgs = wire.find((e) => e.from === 'client' && e.message.method === 'session/new')
    expect(agentArgs?.message.params).toMatchObject({ cwd: await workspaceOf(sandbox, 't-text'), mcpServers: [] })
    expect(wire.some((e) => e.message.method === 'session/request_permission'), 'the approve flag: no permission requests').toBe(false)
  })

  it("creates a file in the workspace through the agent's tool, under the approve flag", async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-tools', 't-tools')
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt, then show it.')] })

    expect(out.error).toBeUndefined()
    const workspace = await workspaceOf(sandbox, 't-tools')
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('first draft\nsecond line "quoted" $HOME\n')
    const starts = ofType(out.chunks, 'TOOL_CALL_START')
    expect(starts.map((c) => [c.toolCallId, c.toolCallName, c.metadata.kind])).toEqual([
      ['call_write_1', 'Write notes.txt', 'edit'],
      ['call_exec_2', 'cat notes.txt', 'execute'],
    ])
    expect(starts.every((c) => c.metadata.providerExecuted === true)).toBe(true)
    expect(ofType(out.chunks, 'TOOL_CALL_END').map((c) => c.input)).toEqual([{ path: 'notes.txt', content: 'first draft\nsecond line "quoted" $HOME\n' }, { command: 'cat notes.txt' }])
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT').map((c) => c.content)).toEqual([`[diff ${join(workspace, 'notes.txt')}]`, 'first draft\nsecond line "quoted" $HOME\n'])
    expect(custom(out.chunks, GROK_BUILD_PERMISSION_EVENT)).toEqual([])
    expect(out.text).toBe("I'll write notes.txt first.Done: notes.txt is written.")
  })

  it('answers permission requests from the policy: the write allowed, the denied command refused', async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-policy', 't-policy', { policy: { commands: { deny: ['cat *'] } } })
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-policy', messages: [user('Create notes.txt, then show it.')] })

    expect(out.error).toBeUndefined()
    expect(existsSync(join(await workspaceOf(sandbox, 't-policy'), 'notes.txt'))).toBe(true)
    expect(custom(out.chunks, GROK_BUILD_PERMISSION_EVENT).map((c) => c.value)).toEqual([
      { toolCallId: 'call_write_1', title: 'Write notes.txt', kind: 'edit', decision: 'allow', optionId: 'allow-once' },
      { toolCallId: 'call_exec_2', title: 'cat notes.txt', kind: 'execute', decision: 'deny', optionId: 'reject-once' },
    ])
    expect(ofType(out.chunks, 'TOOL_CALL_END').map((c) => c.metadata.status)).toEqual(['completed', 'failed'])
  })

  it('refuses file writes when the policy turns them off: no file, a failed tool call', async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-nowrite', 't-nowrite', { policy: { capabilities: { fileWrite: false } } })
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-nowrite', messages: [user('Create notes.txt, then show it.')] })
    expect(existsSync(join(await workspaceOf(sandbox, 't-nowrite'), 'notes.txt'))).toBe(false)
    expect(custom(out.chunks, GROK_BUILD_PERMISSION_EVENT)[0]!.value.decision).toBe('deny')
    expect(out.text).toContain('I could not write notes.txt.')
  })

  it('resumes the session through ACP session/load: the agent remembers, the replayed history is not re-emitted', async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-resume', 't-resume')
    const adapter = grokBuildText('grok-4.5', options)
    const first = await runGrok({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.')] })
    expect(first.error).toBeUndefined()
    expect(first.text).toBe('Noted: pelican.')
    expect(first.sessionId).toMatch(/^ses_/)

    const wire: GrokAcpTranscriptEntry[] = []
    const history: ModelMessage[] = [user('Remember the word pelican.'), { role: 'assistant', content: first.text }, user('What did I ask first?')]
    const second = await runGrok({ adapter: grokBuildText('grok-4.5', { ...options, onAcpMessage: (e) => wire.push(e) }), sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: first.sessionId } })
    expect(second.error).toBeUndefined()
    expect(second.text).toBe('You first asked: "Remember the word pelican."')
    expect(second.sessionId).toBe(first.sessionId)
    expect(wire.filter((e) => e.from === 'client').map((e) => e.message.method).filter(Boolean)).toEqual(['initialize', 'session/load', 'session/prompt'])
    const prompt = wire.find((e) => e.message.method === 'session/prompt')!.message.params as { prompt: { text: string }[] }
    expect(prompt.prompt[0]!.text, 'a resumed run sends only the new message').toBe('What did I ask first?')
    expect(wire.filter((e) => (e.message.params as { update?: { sessionUpdate?: string } })?.update?.sessionUpdate === 'user_message_chunk').length, 'the agent replayed the history').toBe(1)

    // Without the session the agent's session knows nothing, and the history goes in the prompt as a preamble.
    const freshWire: GrokAcpTranscriptEntry[] = []
    const fresh = await runGrok({ adapter: grokBuildText('grok-4.5', { ...options, onAcpMessage: (e) => freshWire.push(e) }), sandbox, threadId: 't-resume', messages: history })
    expect(fresh.text).toBe('I have no earlier messages in this session.')
    expect(fresh.sessionId).not.toBe(first.sessionId)
    const freshPrompt = freshWire.find((e) => e.message.method === 'session/prompt')!.message.params as { prompt: { text: string }[] }
    expect(freshPrompt.prompt[0]!.text).toBe('Earlier in this conversation:\n\nUser: Remember the word pelican.\n\nAssistant: Noted: pelican.\n\nCurrent request:\n\nWhat did I ask first?')
  })

  it('turns an unknown session into RUN_ERROR session_not_found naming session/load', async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-badsession', 't-badsession')
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-badsession', messages: [user('hi')], modelOptions: { sessionId: 'ses_nope' } })
    expect(out.error).toEqual({ code: 'session_not_found', message: 'Grok Build could not resume session "ses_nope": session/load failed: Resource not found. The session is gone (the agent keeps sessions under its HOME inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions.' })
  })

  it("turns an API error into RUN_ERROR with the agent's message, after closing the text so far", async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-api-error', 't-api-error')
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error).toEqual({ code: 'acp_error_-32603', message: 'Grok Build: session/prompt failed: xAI API error: 400 the widget count is invalid.' })
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    const types: string[] = out.chunks.map((c) => c.type)
    expect(types.indexOf('TEXT_MESSAGE_END')).toBeLessThan(types.indexOf('RUN_ERROR'))
  })

  it('reports missing credentials as auth_required, and logs in with authMethod', async () => {
    const { options } = setup({ apiKey: false })
    const sandbox = sandboxFor('gb-auth', 't-auth')
    const saved = process.env.XAI_API_KEY
    delete process.env.XAI_API_KEY // the adapter forwards the host's key; this test needs none
    try {
      const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-auth', messages: [user('Say hello')] })
      expect(out.error?.code).toBe('auth_required')
      expect(out.error?.message).toContain('Set XAI_API_KEY')
      const loggedIn = await runGrok({ adapter: grokBuildText('grok-4.5', { ...options, authMethod: 'fake-login' }), sandbox, threadId: 't-auth', messages: [user('Say hello')] })
      expect(loggedIn.error).toBeUndefined()
      expect(loggedIn.text).toContain('Hello from the fake Grok agent.')
    } finally {
      if (saved !== undefined) process.env.XAI_API_KEY = saved
    }
  })

  it('aborts mid-tool: the stream ends without throwing, and the agent and its tool process are gone', async () => {
    const { home, options } = setup()
    const sandbox = sandboxFor('gb-abort', 't-abort')
    const marker = `300.${process.pid}${Date.now() % 100_000}`
    const controller = new AbortController()
    let sawTool = false
    const run = runGrok({
      adapter: grokBuildText('grok-4.5', options),
      sandbox,
      threadId: 't-abort',
      messages: [user(`Run the slow job ${marker}`)],
      abortController: controller,
      onChunk: (chunk) => {
        if (chunk.type === 'TOOL_CALL_START') sawTool = true
      },
    }).catch((error: unknown) => ({ chunks: [] as StreamChunk[], thrown: error }))
    let slowRan: boolean
    try {
      slowRan = await waitFor(() => sawTool && processesMatching(`sleep ${marker}`).length > 0)
    } finally {
      controller.abort() // also when the wait failed, so the run cannot hang on the sleep
    }
    const out = await run
    expect(slowRan, 'the agent started the slow command before the abort').toBe(true)
    expect('thrown' in out ? out.thrown : undefined).toBeUndefined()
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT')).toHaveLength(0)
    expect(await waitFor(() => processesMatching(`sleep ${marker}`).length === 0), 'no tool process is left').toBe(true)
    expect(await waitFor(() => processesWithEnv(`HOME=${home.dir}`).length === 0), 'no agent process is left').toBe(true)
  })

  it('stops a run that passes timeoutMs with RUN_ERROR timeout', async () => {
    const { home, options } = setup()
    const sandbox = sandboxFor('gb-timeout', 't-timeout')
    const marker = `301.${process.pid}${Date.now() % 100_000}`
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', { ...options, timeoutMs: 1500 }), sandbox, threadId: 't-timeout', messages: [user(`Run the slow job ${marker}`)] })
    expect(out.error?.code).toBe('timeout')
    expect(await waitFor(() => processesMatching(`sleep ${marker}`).length === 0 && processesWithEnv(`HOME=${home.dir}`).length === 0)).toBe(true)
  })

  it('says how to install the CLI when it is neither in $HOME/.grok/bin nor on PATH', async () => {
    const { home, options } = setup()
    rmSync(join(home.dir, '.grok'), { recursive: true })
    const sandbox = sandboxFor('gb-missing', 't-missing')
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-missing', messages: [user('Say hello')] })
    expect(out.error?.code).toBe('cli_not_found')
    expect(out.error?.message).toContain('looked for $HOME/.grok/bin/grok, then grok on PATH')
    expect(out.error?.message).toContain('grokBuildText(model, { executable })')

    const explicit = await runGrok({ adapter: grokBuildText('grok-4.5', { ...options, executable: fake.launcher }), sandbox, threadId: 't-missing', messages: [user('Say hello')] })
    expect(explicit.error, 'an explicit executable needs no HOME install').toBeUndefined()
  })

  it('refuses a provider that cannot write to stdin, saying why, before starting anything', async () => {
    const { home, options } = setup()
    const sandbox = sandboxFor('gb-nostdin', 't-nostdin', { provider: withoutStdin(provider) })
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-nostdin', messages: [user('Say hello')] })
    expect(out.error?.code).toBe('stdin_unsupported')
    expect(out.error?.message).toContain('writableStdin')
    expect(existsSync(join(home.dir, '.grok', 'sessions')), 'the CLI never ran').toBe(false)
  })

  it("bridges chat() tools to the agent as the MCP server 'tanstack' and runs them on the host", async () => {
    const { options } = setup()
    const sandbox = sandboxFor('gb-bridge', 't-bridge')
    const calls: unknown[] = []
    const weather = { name: 'get_weather', description: 'Weather for a city', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] }, execute: async (args: { city: string }) => (calls.push(args), `Sunny in ${args.city}`) }
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-bridge', messages: [user('Use the host tool get_weather')], tools: [weather] })
    expect(out.error).toBeUndefined()
    expect(calls).toEqual([{ city: 'Paris' }])
    expect(out.text).toBe('The host tool said: Sunny in Paris')
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT').map((c) => c.content)).toEqual(['Sunny in Paris'])
    expect(custom(out.chunks, TOOL_BRIDGE_CALL_EVENT).map((c) => c.value.toolName)).toEqual(['get_weather'])
    expect(custom(out.chunks, TOOL_BRIDGE_RESULT_EVENT).map((c) => c.value.isError)).toEqual([false])
  })

  it('projects skills into .grok/skills, MCP servers into the ACP session, and instructions as AGENTS.md', async () => {
    const { options } = setup()
    const secrets = createSecrets({ ISSUES_TOKEN: 'issues-token-value' })
    const workspace = defineWorkspace({
      secrets,
      instructions: 'Always answer in haiku.\nNever push.',
      skills: [agentSkill('release', { description: 'Cut a release' }), mcpSkill('issues', { url: 'https://mcp.example/issues', headers: { Authorization: bearer(secrets.ISSUES_TOKEN) } }), mcpSkill('files', { command: 'mcp-files', args: [] })],
    })
    const sandbox = sandboxFor('gb-projection', 't-projection', { workspace })
    const wire: GrokAcpTranscriptEntry[] = []
    const adapter = grokBuildText('grok-4.5', { ...options, onAcpMessage: (e) => wire.push(e) })
    const ask = (text: string) => runGrok({ adapter, sandbox, threadId: 't-projection', messages: [user(text)] })
    expect((await ask('Which MCP servers do you have?')).text).toBe('MCP servers: issues (http), files (stdio).')
    expect((await ask('Which skills do you have?')).text).toBe('Skills: release.')
    expect((await ask('What are your instructions?')).text).toBe('Instructions: Always answer in haiku.')
    const newSession = wire.find((e) => e.message.method === 'session/new')!.message.params as { mcpServers: unknown[] }
    expect(newSession.mcpServers).toContainEqual({ type: 'http', name: 'issues', url: 'https://mcp.example/issues', headers: [{ name: 'Authorization', value: 'Bearer issues-token-value' }] })
    const dir = await workspaceOf(sandbox, 't-projection')
    expect(readdirSync(join(dir, '.grok', 'skills'))).toEqual(['release'])
    expect(JSON.stringify(readdirSync(dir).map((f) => (f.endsWith('.json') || f.endsWith('.md') ? readFileSync(join(dir, f), 'utf8') : ''))), 'no secret is written to the workspace').not.toContain('issues-token-value')
  })
})
