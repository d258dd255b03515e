/**
 * `grokBuildText` with the fake Grok Build agent INSIDE a Docker sandbox: the
 * bundled fake (one file plus its `grok` launcher) bind-mounted read-only
 * into the Debian image, linked into the container's `$HOME/.grok/bin` by
 * the workspace setup, and run there with the image's own node. A text turn,
 * a tool turn that creates a file in the container, resume (the session file
 * lives in the container's HOME and survives between runs of the thread), an
 * API error, host tools over the bridge, and an abort mid-tool. Every
 * container carries a label unique to this file; afterwards no container,
 * image, volume or agent process of ours may remain.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, expect, it } from 'vitest'
import type { ModelMessage, StreamChunk } from '@tanstack/ai'
import { GROK_BUILD_INIT_EVENT, GROK_BUILD_SESSION_EVENT, grokBuildText, type GrokBuildOptions } from '@tanstack/ai-grok-build'
import { defineSandbox, defineWorkspace, TOOL_BRIDGE_RESULT_EVENT, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { ensureFakeAgent } from '../src/build-fake.js'
import { containerExists, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { custom, ofType, processesMatching, processesWithEnv, runGrok, waitFor } from './helpers/run-grok.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `gb-docker-${randomUUID().slice(0, 8)}` }
/** Where the host's fake agent folder appears inside every container. */
const FAKE_DIR = '/opt/fake-grok'
const fake = await ensureFakeAgent()
const reason = await dockerMissing([IMAGE])

describeWithDocker('grok-build adapter with the fake ACP agent in a Docker sandbox', reason, () => {
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500, mounts: [{ source: fake.dir, target: FAKE_DIR, readOnly: true }] })
  /** Installs the CLI where xAI's installer would: the container's `$HOME/.grok/bin/grok`. */
  const workspace = defineWorkspace({ setup: [`mkdir -p "$HOME/.grok/bin" && ln -sf ${FAKE_DIR}/grok "$HOME/.grok/bin/grok"`] })
  const sandboxes: { sandbox: SandboxDefinition; threadId: string }[] = []
  const tags: string[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  })

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests, and no snapshot was taken').toEqual({ containers: [], images: [], volumes: [] })
    expect(await dockerLeftovers(label)).toEqual({ containers: [], images: [], volumes: [] })
    // The host sees every container's processes: none may still carry one of our tags.
    expect(tags.flatMap((tag) => processesWithEnv(`GROK_E2E_TAG=${tag}`)), 'no agent process or tool process is left').toEqual([])
  }, 120_000)

  /** The CLI's environment: a dummy key and a tag unique to the test, so its processes can be found from the host. */
  function cliOptions(): { tag: string; options: GrokBuildOptions } {
    const tag = randomUUID()
    tags.push(tag)
    return { tag, options: { env: { XAI_API_KEY: 'xai-test-key-not-a-secret', GROK_E2E_TAG: tag } } }
  }

  function sandboxFor(id: string, threadId: string): { sandbox: SandboxDefinition; handles: SandboxHandle[] } {
    const handles: SandboxHandle[] = []
    const sandbox = defineSandbox({ id, provider, workspace, lifecycle: { snapshot: 'none' }, hooks: { onReady: (handle) => void handles.push(handle) } })
    sandboxes.push({ sandbox, threadId })
    return { sandbox, handles }
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })

  it('streams a text turn from the agent running in the container', async () => {
    const { options } = cliOptions()
    const { sandbox, handles } = sandboxFor('gbd-text', 't-text')
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-text', messages: [user('Say hello')] })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Hello from the fake Grok agent. This reply is long enough to arrive in several chunks — über “quoted”.')
    expect(custom(out.chunks, GROK_BUILD_INIT_EVENT)).toHaveLength(1)
    expect(ofType(out.chunks, 'RUN_FINISHED')[0]!.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })
    // It ran in the container: the session file is in the container's HOME.
    const sessions = await handles[0]!.process.exec('ls "$HOME/.grok/sessions"')
    expect(sessions.stdout.trim().split('\n')).toContain(`${out.sessionId}.json`)
  })

  it("creates a file in the container's workspace through the agent's tools", async () => {
    const { options } = cliOptions()
    const { sandbox, handles } = sandboxFor('gbd-tools', 't-tools')
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt, then show it.')] })
    expect(out.error).toBeUndefined()
    expect(await handles[0]!.fs.read('notes.txt')).toBe('first draft\nsecond line "quoted" $HOME\n')
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => [c.toolCallId, c.metadata.kind])).toEqual([
      ['call_write_1', 'edit'],
      ['call_exec_2', 'execute'],
    ])
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT').map((c) => c.content)).toEqual(['[diff /workspace/notes.txt]', 'first draft\nsecond line "quoted" $HOME\n'])
  })

  it("resumes the session from the HOME kept in the thread's container", async () => {
    const { options } = cliOptions()
    const { sandbox, handles } = sandboxFor('gbd-resume', 't-resume')
    const adapter = grokBuildText('grok-4.5', options)
    const first = await runGrok({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.')] })
    expect(first.text).toBe('Noted: pelican.')
    const second = await runGrok({ adapter, sandbox, threadId: 't-resume', messages: [user('Remember the word pelican.'), { role: 'assistant', content: first.text }, user('What did I ask first?')], modelOptions: { sessionId: first.sessionId } })
    expect(second.error).toBeUndefined()
    expect(second.text).toBe('You first asked: "Remember the word pelican."')
    expect(second.sessionId).toBe(first.sessionId)
    expect(custom(second.chunks, GROK_BUILD_SESSION_EVENT)).toHaveLength(1)
    expect(handles.map((h) => h.id), 'both runs used the same container').toEqual([handles[0]!.id, handles[0]!.id])
  })

  it("turns an API error into RUN_ERROR with the agent's message", async () => {
    const { options } = cliOptions()
    const { sandbox } = sandboxFor('gbd-api-error', 't-api-error')
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error).toEqual({ code: 'acp_error_-32603', message: 'Grok Build: session/prompt failed: xAI API error: 400 the widget count is invalid.' })
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
  })

  it('bridges chat() tools from the container to the host', async () => {
    const { options } = cliOptions()
    const { sandbox } = sandboxFor('gbd-bridge', 't-bridge')
    const weather = { name: 'get_weather', description: 'Weather for a city', inputSchema: { type: 'object', properties: { city: { type: 'string' } } }, execute: async ({ city }: { city: string }) => `Sunny in ${city}` }
    const out = await runGrok({ adapter: grokBuildText('grok-4.5', options), sandbox, threadId: 't-bridge', messages: [user('Use the host tool get_weather')], tools: [weather] })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe('The host tool said: Sunny in Paris')
    expect(custom(out.chunks, TOOL_BRIDGE_RESULT_EVENT).map((c) => c.value.content)).toEqual(['Sunny in Paris'])
  })

  it('aborts mid-tool: the agent and its tool process are gone with the container', async () => {
    const { tag, options } = cliOptions()
    const { sandbox, handles } = sandboxFor('gbd-abort', 't-abort')
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
    let inside = ''
    let slowRan: boolean
    try {
      slowRan = await waitFor(() => sawTool && processesMatching(`sleep ${marker}`).length > 0)
      if (slowRan) inside = (await handles[0]!.process.exec('ps -eo args')).stdout
    } finally {
      controller.abort()
    }
    const out = await run
    expect(slowRan, 'the agent started the slow command before the abort').toBe(true)
    expect(inside, 'the agent ran inside the container').toContain(`${FAKE_DIR}/fake-grok.mjs agent --model grok-4.5 --auto-approve stdio`)
    expect(inside, 'and so did its tool').toContain(`sleep ${marker}`)
    expect('thrown' in out ? out.thrown : undefined).toBeUndefined()
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(await waitFor(() => processesMatching(`sleep ${marker}`).length === 0), 'no tool process is left').toBe(true)
    expect(await waitFor(() => processesWithEnv(`GROK_E2E_TAG=${tag}`).length === 0), 'no agent process is left').toBe(true)
    const id = handles[0]!.id
    expect(await waitFor(async () => !(await containerExists(id))), 'the aborted run destroyed its container').toBe(true)
  })
})
