/**
 * File events and tool history with the real `claude` CLI against aimock: the
 * model makes the agent write then edit notes.txt with its own tools, and the
 * stream carries `sandbox.file` events for it and a `file.changed` diff with
 * the final content; the finished run's transcript holds the CLI's tool calls
 * (marked as sandbox tool calls) with their results. On local-process (native
 * watch, non-git workspace: an add-patch) and in a Docker container (poll, git
 * workspace: git's diff of the untracked file). Every test removes what it
 * started; afterwards no sandbox directory, container or CLI HOME is left.
 */
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { chat, defineChatMiddleware, type ModelMessage, type StreamChunk } from '@tanstack/ai'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, defineWorkspace, FILE_CHANGED_EVENT, isSandboxToolCall, SANDBOX_FILE_EVENT, withSandbox, type SandboxDefinition, type SandboxHandle, type SandboxProvider } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, makeClaudeHome, startFakeModel, type ClaudeHome, type FakeModel } from '../src/aimock.js'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { ofType, processesWithHome } from './helpers/run-claude.js'

const tools = fileURLToPath(new URL('../fixtures/tools.json', import.meta.url))
const PROMPT = 'Create notes.txt with a first draft, then change it to the final draft.'

/** What one run streamed and the transcript a persistence middleware would save. */
async function runWithTranscript(input: { adapter: ReturnType<typeof claudeCodeText>; sandbox: SandboxDefinition; threadId: string }): Promise<{ chunks: StreamChunk[]; transcript: ModelMessage[] }> {
  let transcript: ModelMessage[] = []
  const persist = defineChatMiddleware({ name: 'persist', onFinish: (ctx) => void (transcript = [...ctx.messages]) })
  const chunks: StreamChunk[] = []
  const stream = chat({ adapter: input.adapter, threadId: input.threadId, messages: [{ role: 'user', content: PROMPT }], middleware: [withSandbox(input.sandbox), persist] } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  for await (const chunk of stream) chunks.push(chunk)
  return { chunks, transcript }
}

/** The checks shared by both providers. */
function expectFileEventsAndHistory(out: { chunks: StreamChunk[]; transcript: ModelMessage[] }, root: string, watch: 'native' | 'poll', diff: (patch: string) => void): void {
  expect(ofType(out.chunks, 'RUN_ERROR')).toEqual([])
  const notes = `${root}/notes.txt`
  const fileEvents = ofType(out.chunks, 'CUSTOM').filter((c) => c.name === SANDBOX_FILE_EVENT).map((c) => c.value)
  const types = fileEvents.filter((v) => v.path === notes).map((v) => v.type)
  expect(types[0], 'the Write tool created notes.txt').toBe('create')
  expect(types.slice(1).every((t) => t === 'change'), 'then Edit changed it').toBe(true)
  // A native watcher sees the edit; a poll (500 ms) may fold the write and the edit into one create.
  if (watch === 'native') expect(types).toContain('change')
  for (const value of fileEvents) expect(Number.isFinite(value.timestamp)).toBe(true)
  const changed = ofType(out.chunks, 'CUSTOM').filter((c) => c.name === FILE_CHANGED_EVENT).map((c) => c.value)
  expect(changed.map((c) => c.path)).toEqual([notes])
  diff(changed[0].diff)
  expect(out.chunks.at(-1)?.type).toBe('RUN_FINISHED')

  // Tool history: the CLI's three tool calls and their results are in the transcript, marked.
  const calls = out.transcript.flatMap((m) => m.toolCalls ?? [])
  expect(calls.map((c) => [c.id, c.function.name])).toEqual([
    ['toolu_e2e_1_write', 'Write'],
    ['toolu_e2e_2_edit', 'Edit'],
    ['toolu_e2e_3_read', 'Read'],
  ])
  expect(calls.every(isSandboxToolCall)).toBe(true)
  expect(JSON.parse(calls[0]!.function.arguments)).toEqual({ file_path: 'notes.txt', content: 'first draft\nsecond line "quoted" $HOME\n' })
  const results = out.transcript.filter((m) => m.role === 'tool')
  expect(results.map((m) => m.toolCallId)).toEqual(['toolu_e2e_1_write', 'toolu_e2e_2_edit', 'toolu_e2e_3_read'])
  expect(results[2]!.content).toBe('1\tfinal draft\n2\tsecond line "quoted" $HOME\n3\t')
  expect(out.transcript.at(-1)).toMatchObject({ role: 'assistant', content: 'Created it; now the edit.notes.txt now says final draft.' })
}

describe('file events with the real CLI on local-process', () => {
  const root = mkdtempSync(join(tmpdir(), 'claude-file-events-'))
  const provider = localProcessSandbox({ root })
  const started: { models: FakeModel[]; homes: ClaudeHome[] } = { models: [], homes: [] }
  const allHomes: string[] = []

  afterEach(async () => {
    for (const model of started.models.splice(0)) await model.stop()
    for (const home of started.homes.splice(0)) home.cleanup()
  })

  afterAll(() => {
    const left = readdirSync(root)
    rmSync(root, { recursive: true, force: true })
    expect(left, 'every sandbox directory is removed').toEqual([])
    expect(allHomes.filter((dir) => existsSync(dir))).toEqual([])
    expect(allHomes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
  })

  it('streams sandbox.file and a file.changed add-patch for the file the agent wrote, and records its tool calls', async () => {
    const model = await startFakeModel(tools)
    started.models.push(model)
    const home = makeClaudeHome('claude-file-events-home')
    started.homes.push(home)
    allHomes.push(home.dir)
    const handles: SandboxHandle[] = []
    const sandbox = defineSandbox({ id: 'cc-files', provider, lifecycle: { reuse: 'none' }, hooks: { onReady: (h) => void handles.push(h) } })
    const out = await runWithTranscript({ adapter: claudeCodeText('sonnet', { executable: claudeBinary(), env: home.env(model.url) }), sandbox, threadId: 't-cc-files' })
    expectFileEventsAndHistory(out, handles[0]!.workspaceRoot, 'native', (patch) => expect(patch).toBe(`diff --git a/notes.txt b/notes.txt\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+final draft\n+second line "quoted" $HOME\n`))
  })
})

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `cc-files-${randomUUID().slice(0, 8)}` }
const CLI = '/opt/claude/claude'
const reason = await dockerMissing([IMAGE])

describeWithDocker('file events with the real CLI in a Docker sandbox', reason, () => {
  const provider: SandboxProvider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500, mounts: [{ source: claudeBinary(), target: CLI, readOnly: true }] })
  const models: FakeModel[] = []
  const homes: string[] = []

  afterEach(async () => {
    for (const model of models.splice(0)) await model.stop()
  })

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
    expect(homes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
  }, 120_000)

  it('streams sandbox.file and a git file.changed diff for the file the agent wrote, and records its tool calls', async () => {
    const host = await bridgeHostAddress()
    const model = await startFakeModel(tools, { host: host! })
    models.push(model)
    const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
    homes.push(home)
    const options: ClaudeCodeOptions = {
      executable: CLI,
      env: { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' },
    }
    const sandbox = defineSandbox({
      id: 'ccd-files',
      provider,
      lifecycle: { reuse: 'none', snapshot: 'none' },
      workspace: defineWorkspace({ setup: ['git init -q', 'echo "# demo" > README.md', 'git add -A', 'git -c user.name=t -c user.email=t@t.invalid commit -qm base'] }),
    })
    const out = await runWithTranscript({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-ccd-files' })
    expectFileEventsAndHistory(out, '/workspace', 'poll', (patch) => {
      expect(patch).toMatch(/^diff --git a\/notes\.txt b\/notes\.txt\nnew file mode 100644\nindex 0000000\.\.[0-9a-f]+\n--- \/dev\/null\n\+\+\+ b\/notes\.txt\n@@ -0,0 \+1,2 @@\n/)
      expect(patch.endsWith(`+final draft\n+second line "quoted" $HOME\n`)).toBe(true)
    })
  })
})
