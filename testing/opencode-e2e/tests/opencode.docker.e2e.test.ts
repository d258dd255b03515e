/**
 * The real `opencode` CLI inside Docker sandboxes, driven by `opencodeText`
 * through chat() + withSandbox over the Docker provider: the host's native
 * binary is mounted read-only into the Debian image (it needs only glibc), and
 * the suite covers a text turn, a tool turn that writes a file in the
 * container, resume (the session lives in the container's HOME), an API
 * error, and a chat() tool bridged back to the host. Reaching the model: the
 * container stays on the default bridge and the fake listens on the bridge's
 * host address (not 0.0.0.0), which the container reaches as
 * host.docker.internal. Every container carries a label unique to this file;
 * afterwards no container, image, volume or CLI process of ours may remain.
 */
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, expect, it } from 'vitest'
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { OPENCODE_SESSION_EVENT, opencodeText, type OpencodeOptions } from '@tanstack/ai-opencode'
import { defineSandbox, defineWorkspace, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { conversationOf, FAKE_MODEL, homeEnv, offlineHomeSetup, opencodeBinary, opencodeVersion, providerConfig, startFakeModel, type FakeModel } from '../src/aimock.js'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { ofType, processesWithHome, runOpencode } from './helpers/run-opencode.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `oc-docker-${randomUUID().slice(0, 8)}` }
/** Where the host's CLI binary appears inside every container. */
const CLI = '/opt/opencode/opencode'
/** A hang guard for one CLI turn, not a timing claim. */
const TURN_MS = 90_000
const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const reason = await dockerMissing([IMAGE])

describeWithDocker('opencode adapter with the real CLI in a Docker sandbox', reason, () => {
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500, mounts: [{ source: opencodeBinary(), target: CLI, readOnly: true }] })
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
   * host), the provider pointed at host.docker.internal.
   */
  async function setup(fixture: string): Promise<{ model: FakeModel; home: string; options: OpencodeOptions }> {
    const host = await bridgeHostAddress()
    const model = await startFakeModel(join(fixtures, fixture), { host: host! })
    started.models.push(model)
    const home = `/tmp/opencode-home-${randomUUID().slice(0, 8)}`
    allHomes.push(home)
    return { model, home, options: { executable: CLI, env: homeEnv(home), config: providerConfig(`http://host.docker.internal:${model.port}`), timeoutMs: TURN_MS } }
  }

  /**
   * A sandbox definition (no snapshots) whose thread sandbox is destroyed
   * after the test; its setup prepares the CLI's config folder for offline
   * runs. `handles` collects every handle it was ready with.
   */
  function sandboxFor(id: string, threadId: string, home: string): { sandbox: SandboxDefinition; handles: SandboxHandle[] } {
    const handles: SandboxHandle[] = []
    const sandbox = defineSandbox({
      id,
      provider,
      workspace: defineWorkspace({ setup: offlineHomeSetup(home, opencodeVersion()) }),
      lifecycle: { snapshot: 'none' },
      hooks: { onReady: (handle) => void handles.push(handle) },
    })
    started.sandboxes.push({ sandbox, threadId })
    return { sandbox, handles }
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })

  it('streams a text turn from the CLI running in the container', async () => {
    const { model, home, options } = await setup('text.json')
    const { sandbox, handles } = sandboxFor('ocd-text', 't-text', home)
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-text', messages: [user('Say hello')] })

    expect(out.error).toBeUndefined()
    expect(out.chunks.map((c) => c.type)).toEqual(['RUN_STARTED', 'CUSTOM', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED'])
    expect(ofType(out.chunks, 'CUSTOM')[0]?.name).toBe(OPENCODE_SESSION_EVENT)
    expect(out.text).toBe('Hello from the fake model. OpenCode prints each text part whole, once it is complete.')
    expect(ofType(out.chunks, 'RUN_FINISHED')[0]!.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })
    expect(model.requests()).toHaveLength(1)

    // It ran in the container: its session database is in the container's HOME, and it installed nothing.
    const [handle] = handles
    expect(handle?.workspaceRoot).toBe('/workspace')
    expect((await handle!.process.exec(`test -s ${home}/.local/share/opencode/opencode.db && echo kept`)).stdout.trim()).toBe('kept')
    expect((await handle!.process.exec(`ls -A ${home}/.config/opencode/node_modules`)).stdout.trim(), 'OpenCode installed nothing from the npm registry').toBe('')
  }, 2 * TURN_MS)

  it("creates a file in the container's workspace through the CLI's own bash tool, and reads it back", async () => {
    const { model, home, options } = await setup('tools.json')
    const { sandbox, handles } = sandboxFor('ocd-tools', 't-tools', home)
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt with a first draft, then read it back.')] })

    expect(out.error).toBeUndefined()
    expect(await handles[0]!.fs.read('notes.txt')).toBe('first draft\nsecond line "quoted" $HOME — ünï\n')
    expect((await handles[0]!.process.exec('stat -c %U /workspace/notes.txt')).stdout.trim(), "written by the sandbox's user (uid 1000 by default, not root)").toBe('sandbox')
    const starts = ofType(out.chunks, 'TOOL_CALL_START')
    expect(starts.map((c) => [c.toolCallId, c.toolCallName])).toEqual([
      ['call_e2e_1_bash', 'bash'],
      ['call_e2e_2_read', 'read'],
    ])
    expect(starts.every((c) => c.metadata?.providerExecuted === true)).toBe(true)
    expect(ofType(out.chunks, 'TOOL_CALL_END').map((c) => c.input)).toEqual([
      { command: "printf 'first draft\\nsecond line \"quoted\" $HOME — ünï\\n' > notes.txt && echo created", description: 'Create notes.txt' },
      { filePath: 'notes.txt' },
    ])
    const results = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(results.map((c) => c.toolCallId)).toEqual(['call_e2e_1_bash', 'call_e2e_2_read'])
    expect(results[0]!.content).toBe('created\n')
    expect(results[1]!.content).toContain('<path>/workspace/notes.txt</path>')
    expect(out.text).toBe('Created it; now I read it back.notes.txt holds the first draft.')
    expect(model.requests()).toHaveLength(3)
  }, 2 * TURN_MS)

  it("resumes the session from the HOME kept in the thread's container", async () => {
    const { model, home, options } = await setup('resume.json')
    const { sandbox, handles } = sandboxFor('ocd-resume', 't-resume', home)
    const adapter = opencodeText(FAKE_MODEL, options)
    const first = await runOpencode({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.')] })
    expect(first.error).toBeUndefined()
    expect(first.text).toBe('Noted: pelican.')

    const history: ModelMessage[] = [user('Remember the word pelican.'), { role: 'assistant', content: first.text }, user('What did I ask first?')]
    const second = await runOpencode({ adapter, sandbox, threadId: 't-resume', messages: history, modelOptions: { sessionId: first.sessionId } })
    expect(second.error).toBeUndefined()
    expect(second.text).toBe('You asked me to remember the word pelican.')
    expect(second.sessionId, 'a resumed run reports the same session').toBe(first.sessionId)
    expect(handles.map((h) => h.id), 'both runs used the same container').toEqual([handles[0]!.id, handles[0]!.id])
    const [, resumed] = model.requests()
    expect(model.requests()).toHaveLength(2)
    expect(conversationOf(resumed!)).toEqual([
      { role: 'user', text: 'Remember the word pelican.' },
      { role: 'assistant', text: 'Noted: pelican.' },
      { role: 'user', text: 'What did I ask first?' },
    ])
  }, 3 * TURN_MS)

  it("turns an API error into RUN_ERROR with the server's message", async () => {
    const { home, options } = await setup('api-error.json')
    const { sandbox } = sandboxFor('ocd-api-error', 't-api-error', home)
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error).toEqual({ message: 'fixture says: the widget count is invalid', code: 'api_error_400' })
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
  }, 2 * TURN_MS)

  it('bridges a chat() tool from the container back to the host over MCP', async () => {
    const { home, options } = await setup('bridge.json')
    const { sandbox } = sandboxFor('ocd-bridge', 't-bridge', home)
    const calls: unknown[] = []
    const weather = toolDefinition({ name: 'get_weather', description: 'The weather in a city.', inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }).server(async (args) => {
      calls.push(args)
      return { city: (args as { city: string }).city, sky: 'sunny' }
    })
    const out = await runOpencode({ adapter: opencodeText(FAKE_MODEL, options), sandbox, threadId: 't-bridge', messages: [user('Weather in Paris?')], tools: [weather] })
    expect(out.error).toBeUndefined()
    expect(calls).toEqual([{ city: 'Paris' }])
    const result = ofType(out.chunks, 'TOOL_CALL_RESULT').find((c) => c.toolCallId === 'call_e2e_weather')
    expect(JSON.parse(result!.content as string)).toEqual({ city: 'Paris', sky: 'sunny' })
    expect(out.text).toBe('It is sunny in Paris.')
  }, 2 * TURN_MS)
})
