/**
 * The real `claude` CLI inside a Daytona sandbox, on the Daytona stand-in
 * (the real @daytona/sdk; a real container per sandbox from the daytona image,
 * the CLI's native binary mounted read-only where a Daytona snapshot would
 * have it installed), driven by `claudeCodeText` through chat() + withSandbox
 * against aimock on the host (reached as host.docker.internal, as a model API
 * on the internet would be). A text turn in /home/daytona/workspace with the
 * prompt delivered through a file (Daytona has no writable stdin), tools that
 * change the workspace, and an abort that kills the CLI's process tree.
 * Afterwards no container or CLI process of ours may remain.
 */
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, expect, it } from 'vitest'
import type { ModelMessage, StreamChunk } from '@tanstack/ai'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import { daytonaSandbox } from '@tanstack/ai-sandbox-daytona'
import { DAYTONA_IMAGE, startDaytonaStandin } from '@testing/daytona-standin'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { claudeBinary, startFakeModel, userTexts, type FakeModel } from '../src/aimock.js'
import { ofType, processesMatching, processesWithHome, runClaude, waitFor } from './helpers/run-claude.js'

const RUN = { 'tanstack-test.run': `cc-daytona-${randomUUID().slice(0, 8)}` }
/** Where the CLI binary appears inside every sandbox. */
const CLI = '/opt/claude/claude'
const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const reason = await dockerMissing([DAYTONA_IMAGE])
const standin = reason === null ? await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: RUN, mounts: [{ source: claudeBinary(), target: CLI, readOnly: true }], hostGateway: true }) : undefined

describeWithDocker('claude-code adapter with the real CLI in a Daytona sandbox (stand-in)', reason, () => {
  const provider = daytonaSandbox({ apiKey: 'test', apiUrl: standin?.apiUrl ?? 'http://127.0.0.1:9', killGraceMs: 500 })
  const started: { models: FakeModel[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], sandboxes: [] }
  const allHomes: string[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    for (const model of started.models.splice(0)) await model.stop()
  })

  afterAll(async () => {
    await standin?.close()
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
    expect(allHomes.flatMap(processesWithHome), 'no CLI process or tool process is left').toEqual([])
  }, 120_000)

  async function setup(fixture: string, vars?: Record<string, string>): Promise<{ model: FakeModel; home: string; options: ClaudeCodeOptions }> {
    const model = await startFakeModel(join(fixtures, fixture), { host: (await bridgeHostAddress())!, ...(vars ? { vars } : {}) })
    started.models.push(model)
    const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
    allHomes.push(home)
    const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
    return { model, home, options: { executable: CLI, env } }
  }

  function sandboxFor(id: string, threadId: string): { sandbox: SandboxDefinition; handles: SandboxHandle[] } {
    const handles: SandboxHandle[] = []
    const sandbox = defineSandbox({ id, provider, lifecycle: { snapshot: 'none' }, hooks: { onReady: (handle) => void handles.push(handle) } })
    started.sandboxes.push({ sandbox, threadId })
    return { sandbox, handles }
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })

  it('streams a text turn from the CLI running in the Daytona workspace', async () => {
    const { model, home, options } = await setup('text.json')
    const { sandbox, handles } = sandboxFor('ccdt-text', 't-text')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-text', messages: [user('Say hello')] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Hello from the fake model. This reply is long enough to arrive in several streamed deltas.')
    expect(out.chunks.at(-1)?.type).toBe('RUN_FINISHED')
    expect(userTexts(model.requests()[0]!)).toEqual(['Say hello'])
    const [handle] = handles
    expect(handle?.workspaceRoot).toBe('/home/daytona/workspace')
    const sessions = await handle!.process.exec(`ls ${home}/.claude/projects/-home-daytona-workspace`)
    expect(sessions.stdout.trim().split('\n')).toContain(`${out.sessionId}.jsonl`)
  })

  it("creates and edits a file in the sandbox's workspace through the CLI's own tools, as the daytona user", async () => {
    const { options } = await setup('tools.json')
    const { sandbox, handles } = sandboxFor('ccdt-tools', 't-tools')
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-tools', messages: [user('Create notes.txt with a first draft, then change it to the final draft.')] })

    expect(out.error).toBeUndefined()
    expect(await handles[0]!.fs.read('/workspace/notes.txt')).toBe('final draft\nsecond line "quoted" $HOME\n')
    expect((await handles[0]!.process.exec('stat -c %U notes.txt')).stdout.trim()).toBe('daytona')
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['Write', 'Edit', 'Read'])
  })

  it('an abort mid-run kills the CLI and the tool it started, and destroys the sandbox', async () => {
    const marker = `300.${process.pid}${Date.now() % 100_000}`
    const { home, options } = await setup('abort.json', { marker })
    const { sandbox, handles } = sandboxFor('ccdt-abort', 't-abort')
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
    try {
      // The host sees the container's processes too; the slow command's marker shows it started.
      slowCommandRan = await waitFor(() => sawToolCall && processesMatching(marker).length > 0)
    } finally {
      controller.abort() // also when the wait failed, so the run cannot hang on `sleep 300`
    }
    const out = await run
    expect(slowCommandRan, 'the Bash tool started the slow command before the abort').toBe(true)
    expect('thrown' in out ? out.thrown : undefined, 'an abort ends the stream without throwing').toBeUndefined()
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(0)
    expect(await waitFor(() => processesMatching(marker).length === 0), `no tool process is left: ${processesMatching(marker)}`).toBe(true)
    expect(await waitFor(() => processesWithHome(home).length === 0), `no CLI process is left: ${processesWithHome(home)}`).toBe(true)
    const id = handles[0]!.id
    expect(await waitFor(() => !(standin?.sandboxIds().includes(id) ?? false)), 'the aborted run destroyed its sandbox').toBe(true)
  })
})
