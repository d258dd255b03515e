/**
 * The real `codex` CLI inside Docker sandboxes: the host's static native
 * binary mounted read-only into the Debian image, driven by `codexText`
 * through chat() + withSandbox, against aimock reached as
 * host.docker.internal (the fake listens on the bridge's host address only).
 * The provider settings go in as `-c` overrides, so nothing is prepared in the
 * container. Every container carries this run's label; afterAll checks none
 * is left, nor any process with one of our HOMEs.
 */
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, expect, it } from 'vitest'
import { toolDefinition, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { CODEX_SESSION_EVENT, codexText, type CodexOptions } from '@tanstack/ai-codex'
import { defineSandbox, TOOL_BRIDGE_RESULT_EVENT, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { codexBinary, FAKE_KEY_ENV, FAKE_MODEL, fakeProviderConfig, startFakeModel, userTexts, allTexts, type FakeModel } from '../src/aimock.js'
import { bridgeHostAddress, containerExists, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { ofType, processesMatching, processesWithHome, runCodex, waitFor } from './helpers/run-codex.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `codex-docker-${randomUUID().slice(0, 8)}` }
/** Where the host's CLI binary appears inside every container. */
const CLI = '/opt/codex/codex'
const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const reason = await dockerMissing([IMAGE])

describeWithDocker('codex adapter with the real CLI in a Docker sandbox', reason, () => {
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500, mounts: [{ source: codexBinary(), target: CLI, readOnly: true }] })
  const started: { models: FakeModel[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], sandboxes: [] }
  const allHomes: string[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    for (const model of started.models.splice(0)) await model.stop()
  })

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests, and no snapshot was taken').toEqual({ containers: [], images: [], volumes: [] })
    expect(await dockerLeftovers(label)).toEqual({ containers: [], images: [], volumes: [] })
    // The host sees every container's processes: none may still carry one of our CLI HOMEs.
    expect(allHomes.flatMap(processesWithHome), 'no CLI process or tool process is left').toEqual([])
  }, 120_000)

  /**
   * A fake model on the bridge's host address, and the CLI's options: a HOME
   * inside the container (unique, so its processes can be found from the
   * host; Codex creates `$HOME/.codex`), the fake as host.docker.internal.
   */
  async function setup(fixture: string, vars?: Record<string, string>): Promise<{ model: FakeModel; home: string; options: CodexOptions }> {
    const host = await bridgeHostAddress()
    const model = await startFakeModel(join(fixtures, fixture), { host: host!, ...(vars ? { vars } : {}) })
    started.models.push(model)
    const home = `/tmp/codex-home-${randomUUID().slice(0, 8)}`
    allHomes.push(home)
    return { model, home, options: { executable: CLI, env: { HOME: home, [FAKE_KEY_ENV]: 'test-key-not-a-secret' }, config: fakeProviderConfig(`http://host.docker.internal:${model.port}/v1`) } }
  }

  /** A sandbox definition (no snapshots) whose thread sandbox is destroyed after the test; `handles` collects every handle it was ready with. */
  function sandboxFor(id: string, threadId: string): { sandbox: SandboxDefinition; handles: SandboxHandle[] } {
    const handles: SandboxHandle[] = []
    const sandbox = defineSandbox({ id, provider, lifecycle: { snapshot: 'none' }, hooks: { onReady: (handle) => void handles.push(handle) } })
    started.sandboxes.push({ sandbox, threadId })
    return { sandbox, handles }
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })

  it('streams a text turn from the CLI running in the container', async () => {
    const { model, home, options } = await setup('text.json')
    const { sandbox, handles } = sandboxFor('cxd-text', 't-text')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-text', messages: [user('Say hello')] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Hello from the fake model. Codex reports a whole message at once.')
    const types = out.chunks.map((c) => c.type)
    expect(types[0]).toBe('RUN_STARTED')
    expect(types.at(-1)).toBe('RUN_FINISHED')
    expect(ofType(out.chunks, 'CUSTOM').map((c) => c.name)).toEqual([CODEX_SESSION_EVENT])
    expect(ofType(out.chunks, 'RUN_FINISHED')[0]!.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })
    expect(model.requests()).toHaveLength(1)
    expect(userTexts(model.requests()[0]!)).toEqual(['Say hello'])
    expect(allTexts(model.requests()[0]!), 'Codex saw the container workspace as its cwd').toContain('<cwd>/workspace</cwd>')

    // It ran in the container: its thread is stored in the container's HOME, and not on the host.
    const [handle] = handles
    expect(handle?.workspaceRoot).toBe('/workspace')
    const sessions = await handle!.process.exec(`find ${home}/.codex/sessions -name '*.jsonl'`)
    expect(sessions.stdout).toContain(out.sessionId!)
    expect(existsSync(home), 'the HOME is not on the host').toBe(false)
  })

  it("creates and then patches a file in the container's workspace through the CLI's own tools", async () => {
    const { model, options } = await setup('tools.json')
    const { sandbox, handles } = sandboxFor('cxd-tools', 't-tools')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt with a first draft, then change it to the final draft.')] })

    expect(out.error).toBeUndefined()
    expect(await handles[0]!.fs.read('notes.txt')).toBe('final draft\nsecond line "quoted" $HOME\n')
    expect((await handles[0]!.process.exec('stat -c %U /workspace/notes.txt')).stdout.trim(), "written by the container's user").toBe('sandbox')
    const starts = ofType(out.chunks, 'TOOL_CALL_START')
    expect(starts.map((c) => c.toolCallName)).toEqual(['exec_command', 'apply_patch', 'exec_command'])
    expect(ofType(out.chunks, 'TOOL_CALL_END')[1]!.input).toEqual({ changes: [{ path: '/workspace/notes.txt', kind: 'update' }] })
    const results = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(results.map((c) => c.toolCallId)).toEqual(starts.map((c) => c.toolCallId))
    expect(results.map((c) => c.content)).toEqual(['', 'update /workspace/notes.txt', 'final draft\nsecond line "quoted" $HOME\n'])
    expect(out.text).toBe('Created it; now the edit.notes.txt now says final draft.')
    expect(model.requests()).toHaveLength(4)
  })

  it("resumes the Codex thread from the HOME kept in the thread's container", async () => {
    const { model, options } = await setup('resume.json')
    const { sandbox, handles } = sandboxFor('cxd-resume', 't-resume')
    const adapter = codexText(FAKE_MODEL, options)
    const first = await runCodex({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.')] })
    expect(first.error).toBeUndefined()
    expect(first.text).toBe('Noted: pelican.')

    const history: ModelMessage[] = [user('Remember the word pelican.'), { role: 'assistant', content: first.text }, user('What did I ask first?')]
    const second = await runCodex({ adapter, sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: first.sessionId } })
    expect(second.error).toBeUndefined()
    expect(second.text).toBe('You asked me to remember the word pelican.')
    expect(second.sessionId, 'a resumed run reports the same thread').toBe(first.sessionId)
    expect(handles.map((h) => h.id), 'both runs used the same container').toEqual([handles[0]!.id, handles[0]!.id])
    expect(model.requests()).toHaveLength(2)
    expect(userTexts(model.requests()[1]!)).toEqual(['Remember the word pelican.', 'What did I ask first?'])
    expect(allTexts(model.requests()[1]!)).toContain('Noted: pelican.')
  })

  it("turns an API error into RUN_ERROR with the server's message", async () => {
    const { options } = await setup('api-error.json')
    const { sandbox } = sandboxFor('cxd-api-error', 't-api-error')
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error).toEqual({ message: 'fixture says: the widget count is invalid', code: 'api_error' })
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(out.text).toBe('')
  })

  it('runs chat() tools on the host for the agent in the container', async () => {
    const { options } = await setup('mcp.json')
    const { sandbox } = sandboxFor('cxd-bridge', 't-bridge')
    const calls: unknown[] = []
    const weather = toolDefinition({ name: 'get_weather', description: 'The weather in a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }).server(async (args) => {
      calls.push(args)
      return `Sunny in ${(args as { city: string }).city}, 21 °C.`
    })
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-bridge', messages: [user('Weather in Paris?')], tools: [weather] })
    expect(out.error).toBeUndefined()
    expect(calls).toEqual([{ city: 'Paris' }])
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName), "the app's tool name").toEqual(['get_weather'])
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT')[0]!.content).toBe('Sunny in Paris, 21 °C.')
    expect(ofType(out.chunks, 'CUSTOM').find((c) => c.name === TOOL_BRIDGE_RESULT_EVENT)?.value).toMatchObject({ isError: false })
  })

  it('aborts mid-run: the CLI and its tool process are gone with the container', async () => {
    const marker = `300.${process.pid}${Date.now() % 100_000}`
    const { home, options } = await setup('abort.json', { marker })
    const { sandbox, handles } = sandboxFor('cxd-abort', 't-abort')
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
    let inside = ''
    try {
      slowCommandRan = await waitFor(() => sawToolCall && processesMatching(marker).length > 0)
      if (slowCommandRan) inside = (await handles[0]!.process.exec('ps -eo args')).stdout
    } finally {
      controller.abort() // also when the wait failed, so the run cannot hang on `sleep 300`
    }
    const out = await run
    expect(slowCommandRan, 'the shell tool started the slow command before the abort').toBe(true)
    expect(inside, 'the CLI ran inside the container').toContain(`${CLI} exec`)
    expect(inside, 'and so did its tool').toContain(`sleep ${marker}`)
    expect('thrown' in out ? out.thrown : undefined, 'an abort ends the stream without throwing').toBeUndefined()
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(await waitFor(() => processesMatching(marker).length === 0), `no tool process is left: ${processesMatching(marker)}`).toBe(true)
    expect(await waitFor(() => processesWithHome(home).length === 0), `no CLI process is left: ${processesWithHome(home)}`).toBe(true)
    const id = handles[0]!.id
    expect(await waitFor(async () => !(await containerExists(id))), 'the aborted run destroyed its container').toBe(true)
  })
})
