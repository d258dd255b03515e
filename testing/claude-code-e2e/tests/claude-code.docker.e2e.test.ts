/**
 * The real `claude` CLI inside a Docker sandbox: its native binary bind-mounted
 * read-only into the Debian image, driven by `claudeCodeText` through chat() +
 * withSandbox, against aimock on the host. A text turn, tools that change the
 * container's workspace, resume (the CLI's HOME lives in the container and
 * survives between runs of the thread), an API error, and an abort mid-run.
 * Reaching the model: the container stays on the default bridge and the fake
 * listens on the bridge's host address (not 0.0.0.0), which the container
 * reaches as host.docker.internal. Every container carries a label unique to
 * this file; afterwards no container, image, volume or CLI process of ours may remain.
 */
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, expect, it } from 'vitest'
import type { ModelMessage, StreamChunk } from '@tanstack/ai'
import { CLAUDE_CODE_INIT_EVENT, CLAUDE_CODE_SESSION_EVENT, claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { claudeBinary, conversationOf, startFakeModel, userTexts, type FakeModel } from '../src/aimock.js'
import { bridgeHostAddress, containerExists, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { ofType, processesMatching, processesWithHome, runClaude, waitFor } from './helpers/run-claude.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `cc-docker-${randomUUID().slice(0, 8)}` }
/** Where the host's CLI binary appears inside every container. */
const CLI = '/opt/claude/claude'
const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const reason = await dockerMissing([IMAGE])

describeWithDocker('claude-code adapter with the real CLI in a Docker sandbox', reason, () => {
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500, mounts: [{ source: claudeBinary(), target: CLI, readOnly: true }] })
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
   * A fake model on the bridge's host address, and the CLI's environment: a
   * HOME inside the container (unique, so its processes can be found from the
   * host), the model as host.docker.internal, a dummy key, no retries.
   */
  async function setup(fixture: string, vars?: Record<string, string>): Promise<{ model: FakeModel; home: string; options: ClaudeCodeOptions }> {
    const host = await bridgeHostAddress()
    const model = await startFakeModel(join(fixtures, fixture), { host: host!, ...(vars ? { vars } : {}) })
    started.models.push(model)
    const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
    allHomes.push(home)
    const env = {
      HOME: home,
      CLAUDE_CONFIG_DIR: `${home}/.claude`,
      ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`,
      ANTHROPIC_API_KEY: 'test-key-not-a-secret',
      CLAUDE_CODE_MAX_RETRIES: '0',
    }
    return { model, home, options: { executable: CLI, env } }
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
    const { sandbox, handles } = sandboxFor('ccd-text', 't-text')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-text', messages: [user('Say hello')] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Hello from the fake model. This reply is long enough to arrive in several streamed deltas.')
    const types = out.chunks.map((c) => c.type)
    expect(types[0]).toBe('RUN_STARTED')
    expect(types.at(-1)).toBe('RUN_FINISHED')
    const custom = ofType(out.chunks, 'CUSTOM')
    expect(custom.map((c) => c.name)).toEqual([CLAUDE_CODE_SESSION_EVENT, CLAUDE_CODE_INIT_EVENT])
    expect(custom[1]?.value.tools, 'the init event lists the CLI tools').toContain('Bash')
    expect(ofType(out.chunks, 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(1)
    expect(ofType(out.chunks, 'RUN_FINISHED')[0]!.usage).toMatchObject({ promptTokens: 21, completionTokens: 17, totalTokens: 38 })
    expect(model.requests()).toHaveLength(1)
    expect(userTexts(model.requests()[0]!)).toEqual(['Say hello'])

    // It ran in the container: its session file is in the container's HOME, under the project /workspace, and not on the host.
    const [handle] = handles
    expect(handle?.workspaceRoot).toBe('/workspace')
    const sessions = await handle!.process.exec(`ls ${home}/.claude/projects/-workspace`)
    expect(sessions.stdout.trim().split('\n')).toContain(`${out.sessionId}.jsonl`)
    expect(existsSync(home), 'the HOME is not on the host').toBe(false)
  })

  it("creates and then edits a file in the container's workspace through the CLI's own tools", async () => {
    const { model, options } = await setup('tools.json')
    const { sandbox, handles } = sandboxFor('ccd-tools', 't-tools')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt with a first draft, then change it to the final draft.')] })

    expect(out.error).toBeUndefined()
    expect(await handles[0]!.fs.read('notes.txt')).toBe('final draft\nsecond line "quoted" $HOME\n')
    expect((await handles[0]!.process.exec('stat -c %U /workspace/notes.txt')).stdout.trim(), "written by the sandbox's user (uid 1000 by default, not root)").toBe('sandbox')

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
    const results = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(results.map((c) => c.toolCallId)).toEqual(['toolu_e2e_1_write', 'toolu_e2e_2_edit', 'toolu_e2e_3_read'])
    expect(results[0]!.content).toMatch(/^File created successfully at: notes\.txt/)
    expect(results[1]!.content).toMatch(/^The file notes\.txt has been updated successfully/)
    expect(results[2]!.content).toBe('1\tfinal draft\n2\tsecond line "quoted" $HOME\n3\t')
    const order = out.chunks.filter((c) => c.type === 'TOOL_CALL_END' || c.type === 'TOOL_CALL_RESULT').map((c) => `${c.type}:${(c as { toolCallId: string }).toolCallId}`)
    expect(order).toEqual(['toolu_e2e_1_write', 'toolu_e2e_2_edit', 'toolu_e2e_3_read'].flatMap((id) => [`TOOL_CALL_END:${id}`, `TOOL_CALL_RESULT:${id}`]))
    expect(out.text).toBe('Created it; now the edit.notes.txt now says final draft.')
    expect(model.requests()).toHaveLength(4)
  })

  it("resumes the CLI session from the HOME kept in the thread's container", async () => {
    const { model, home, options } = await setup('resume.json')
    const { sandbox, handles } = sandboxFor('ccd-resume', 't-resume')
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
    expect(handles.map((h) => h.id), 'both runs used the same container').toEqual([handles[0]!.id, handles[0]!.id])
    expect((await handles[0]!.process.exec(`test -s ${home}/.claude/projects/-workspace/${first.sessionId}.jsonl && echo kept`)).stdout.trim()).toBe('kept')

    const [, resumed] = model.requests()
    expect(model.requests()).toHaveLength(2)
    // The earlier turn reaches the model only because the CLI loaded its session from the container's HOME.
    expect(conversationOf(resumed!)).toEqual([
      { role: 'user', text: 'Remember the word pelican.' },
      { role: 'assistant', text: 'Noted: pelican.' },
      { role: 'user', text: 'What did I ask first?' },
    ])
    expect(userTexts(resumed!).at(-1)).toBe('What did I ask first?')
  })

  it("turns an API error into RUN_ERROR with the server's message", async () => {
    const { options } = await setup('api-error.json')
    const { sandbox } = sandboxFor('ccd-api-error', 't-api-error')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-api-error', messages: [user('Trigger a server error')] })
    expect(out.error?.message).toContain('fixture says: the widget count is invalid')
    expect(out.error?.code).toBe('api_error_400')
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(out.text).toBe('')
  })

  it('aborts mid-run: the CLI and its tool process are gone with the container', async () => {
    const marker = `300.${process.pid}${Date.now() % 100_000}`
    const { home, options } = await setup('abort.json', { marker })
    const { sandbox, handles } = sandboxFor('ccd-abort', 't-abort')
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
    let inside = ''
    try {
      // The host sees the container's processes too; the slow command's marker shows it started.
      slowCommandRan = await waitFor(() => sawToolCall && processesMatching(marker).length > 0)
      if (slowCommandRan) inside = (await handles[0]!.process.exec('ps -eo args')).stdout
    } finally {
      controller.abort() // also when the wait failed, so the run cannot hang on `sleep 300`
    }
    const out = await run
    expect(slowCommandRan, 'the Bash tool started the slow command before the abort').toBe(true)
    expect(inside, 'the CLI ran inside the container').toContain(`${CLI} -p`)
    expect(inside, 'and so did its tool').toContain(`sleep ${marker}`)
    expect('thrown' in out ? out.thrown : undefined, 'an abort ends the stream without throwing').toBeUndefined()
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['Bash'])
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT'), 'the run ended before the tool finished').toHaveLength(0)

    expect(await waitFor(() => processesMatching(marker).length === 0), `no tool process is left: ${processesMatching(marker)}`).toBe(true)
    expect(await waitFor(() => processesWithHome(home).length === 0), `no CLI process is left: ${processesWithHome(home)}`).toBe(true)
    const id = handles[0]!.id
    expect(await waitFor(async () => !(await containerExists(id))), 'the aborted run destroyed its container').toBe(true)
    expect(await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-abort', runId: '' }))).toBeNull()
  })
})
