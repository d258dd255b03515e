/**
 * Declarative provisioning with the real `claude` CLI against aimock, in
 * local-process sandboxes: instructions (AGENTS.md and its links) reach the
 * model, an MCP skill with a bearer header from a workspace secret connects
 * to a real MCP server, skills and plugins are projected, and the tokens of a
 * private git source and the MCP server appear nowhere but in the projected
 * MCP config: not on disk, in the instance store, the stream, the debug log,
 * the model's requests, or the errors of a failed bootstrap. Every server,
 * sandbox, temp dir and CLI process is removed; afterAll checks for leftovers.
 */
import { execFile, execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { chat, type Logger, type StreamChunk } from '@tanstack/ai'
import { CLAUDE_CODE_INIT_EVENT, claudeCodeText } from '@tanstack/ai-claude-code'
import {
  agentSkill,
  bearer,
  createSecrets,
  defineSandbox,
  defineWorkspace,
  fileSkill,
  gitSkill,
  gitSource,
  InMemorySandboxInstanceStore,
  mcpSkill,
  PROJECTION_MARKER,
  SandboxError,
  SetupStepFailedError,
  WorkspaceBootstrapError,
  withSandbox,
  type SandboxDefinition,
  type SandboxInstanceRecord,
  type SandboxInstanceStore,
  type Secrets,
  type WorkspaceInput, workspaceSnapshotKey } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, makeClaudeHome, startFakeModel, type ClaudeHome, type FakeModel } from '../src/aimock.js'
import { startGitHttpServer, type GitHttpServer } from '../src/git-http-server.js'
import { countFiles, errorTexts, filesContaining, hits, needlesFor, renderings, safeJson } from '../src/leak-search.js'
import { issueAnswer, startMcpServer, type McpTestServer } from '../src/mcp-server.js'
import { ofType, processesWithHome, type AnyChunk } from './helpers/run-claude.js'

const fixtureFile = fileURLToPath(new URL('../fixtures/provisioning.json', import.meta.url))
const work = mkdtempSync(join(tmpdir(), 'claude-provisioning-e2e-'))
const root = join(work, 'sandboxes')
const repos = join(work, 'repos')
const provider = localProcessSandbox({ root })
const executable = claudeBinary()

// Two distinct random tokens, so each can be searched for on its own.
const GIT_TOKEN = `gittok-${randomBytes(16).toString('hex')}`
const MCP_TOKEN = `mcptok-${randomBytes(16).toString('hex')}`
const gitNeedles = needlesFor('GIT_TOKEN', GIT_TOKEN)
const mcpNeedles = needlesFor('MCP_TOKEN', MCP_TOKEN)
const allNeedles = [...gitNeedles, ...mcpNeedles]

const INSTRUCTION_MARKER = 'house-rule-7f3a'
const INSTRUCTIONS = `# House rules\n\nRule 7 (${INSTRUCTION_MARKER}): answer briefly and cite the rule number.\n`

let model: FakeModel
let home: ClaudeHome
let git: GitHttpServer
let mcp: McpTestServer

/** Sandboxes a test used, destroyed in afterEach. */
const started: { sandbox: SandboxDefinition; threadId: string; instances: SandboxInstanceStore }[] = []

beforeAll(async () => {
  mkdirSync(repos)
  makeBareRepo('app', { 'README.md': 'private app\n', 'src/index.js': 'export const answer = 42\n' })
  makeBareRepo('release-kit', { 'SKILL.md': '---\nname: release-kit\ndescription: "Cutting a release: tag, changelog, publish"\n---\n\nTag with vX.Y.Z, then publish.\n' })
  makeBareRepo('team-skills', { 'skills/triage/SKILL.md': '---\nname: triage\ndescription: "Triaging new issues"\n---\n\nLabel, then assign.\n' })
  model = await startFakeModel(fixtureFile)
  home = makeClaudeHome('claude-provisioning-home')
  git = await startGitHttpServer({ projectRoot: repos, token: GIT_TOKEN })
  mcp = await startMcpServer({ token: MCP_TOKEN })
})

afterEach(async () => {
  for (const { sandbox, threadId, instances } of started.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }), instances })
  model.reset()
  vi.restoreAllMocks()
})

afterAll(async () => {
  const leftBackends = git?.liveBackends() ?? 0
  await Promise.all([model?.stop(), git?.stop(), mcp?.stop()])
  const leftSandboxes = existsSync(root) ? readdirSync(root) : []
  const leftProcesses = home ? processesWithHome(home.dir) : []
  for (const pid of leftProcesses) {
    try {
      process.kill(pid, 'SIGKILL') // reported below; killed so that a failure leaks nothing
    } catch {
      // already gone
    }
  }
  home?.cleanup()
  rmSync(work, { recursive: true, force: true })
  expect(leftSandboxes, 'every sandbox directory is removed').toEqual([])
  expect(leftBackends, 'no git http-backend is left running').toBe(0)
  expect(leftProcesses, 'no CLI process or tool process is left').toEqual([])
  expect(existsSync(home.dir), 'the CLI HOME is removed').toBe(false)
})

/** A bare repository `<repos>/<name>.git` with one commit of `files` on `main`. */
function makeBareRepo(name: string, files: Record<string, string>): void {
  const tree = mkdtempSync(join(work, `${name}-tree-`))
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(tree, path)), { recursive: true })
    writeFileSync(join(tree, path), content)
  }
  const g = (...args: string[]) => execFileSync('git', ['-C', tree, '-c', 'user.name=Test', '-c', 'user.email=test@example.invalid', ...args], { stdio: 'pipe' })
  g('init', '-q', '-b', 'main')
  g('add', '-A')
  g('commit', '-q', '-m', `${name}: first commit`)
  execFileSync('git', ['clone', '-q', '--bare', tree, join(repos, `${name}.git`)], { stdio: 'pipe' })
  rmSync(tree, { recursive: true, force: true })
}

/** A sandbox definition over the local-process provider, destroyed after the test. */
function sandboxFor(id: string, threadId: string, workspace: WorkspaceInput, instances: SandboxInstanceStore = new InMemorySandboxInstanceStore()): { sandbox: SandboxDefinition; instances: SandboxInstanceStore } {
  const sandbox = defineSandbox({ id, provider, workspace: defineWorkspace(workspace) })
  started.push({ sandbox, threadId, instances })
  return { sandbox, instances }
}

/** One debug log call, as the logger received it. */
interface LogLine {
  level: keyof Logger
  message: string
  meta?: Record<string, unknown>
}

function collectingLogger(lines: LogLine[]): Logger {
  const at = (level: keyof Logger) => (message: string, meta?: Record<string, unknown>) => void lines.push({ level, message, ...(meta ? { meta } : {}) })
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }
}

/** One chat() run through withSandbox; collects every chunk, and the error if the stream throws. */
async function turn(input: { sandbox: SandboxDefinition; instances: SandboxInstanceStore; threadId: string; prompt: string; logs?: LogLine[] }): Promise<{ chunks: AnyChunk[]; thrown?: unknown }> {
  const chunks: AnyChunk[] = []
  const stream = chat({
    adapter: claudeCodeText('sonnet', { executable, env: home.env(model.url) }),
    threadId: input.threadId,
    messages: [{ role: 'user', content: input.prompt }],
    middleware: [withSandbox(input.sandbox, { instances: input.instances })],
    ...(input.logs ? { debug: { logger: collectingLogger(input.logs) } } : {}),
  } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  try {
    for await (const chunk of stream) chunks.push(chunk as AnyChunk)
  } catch (error) {
    return { chunks, thrown: error }
  }
  return { chunks }
}

/** The `<root>/<id>` directory of a thread's sandbox and its workspace. */
async function dirsOf(sandbox: SandboxDefinition, instances: SandboxInstanceStore, threadId: string): Promise<{ sandboxDir: string; workspace: string }> {
  const record = await instances.get(sandbox.key({ threadId, runId: '' }))
  expect(record, `a sandbox is recorded for thread ${threadId}`).not.toBeNull()
  const sandboxDir = join(root, record!.providerSandboxId)
  return { sandboxDir, workspace: join(sandboxDir, 'workspace') }
}

/** The CLI's raw `system/init` line, from the adapter's `provider` debug log. */
function cliInitLine(logs: LogLine[]): { skills?: string[] } | undefined {
  for (const { message, meta } of logs) {
    if (!message.includes('claude-code line') || typeof meta?.line !== 'string') continue
    const line = JSON.parse(meta.line) as { type?: string; subtype?: string; skills?: string[] }
    if (line.type === 'system' && line.subtype === 'init') return line
  }
  return undefined
}

const runError = (chunks: AnyChunk[]) => ofType(chunks as StreamChunk[], 'RUN_ERROR')[0]
const initEvent = (chunks: AnyChunk[]) => chunks.find((c) => c.type === 'CUSTOM' && c.name === CLAUDE_CODE_INIT_EVENT)?.value as { tools: string[]; mcpServers: { name: string; status: string }[] } | undefined

/** Run a command on the host (async, so the in-process servers keep answering). */
function host(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: options.cwd, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...options.env } }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr })
    })
  })
}

describe('workspace provisioning with the real claude CLI', () => {
  it('writes instructions as AGENTS.md with CLAUDE.md and GEMINI.md linked to it, and the CLI sends them to the model', async () => {
    const { sandbox, instances } = sandboxFor('prov-instructions', 't-instructions', { instructions: INSTRUCTIONS })
    const out = await turn({ sandbox, instances, threadId: 't-instructions', prompt: 'Summarise the project rules' })
    expect(runError(out.chunks)).toBeUndefined()
    expect(out.thrown).toBeUndefined()

    const { workspace } = await dirsOf(sandbox, instances, 't-instructions')
    expect(readFileSync(join(workspace, 'AGENTS.md'), 'utf8')).toBe(INSTRUCTIONS)
    for (const alias of ['CLAUDE.md', 'GEMINI.md']) {
      expect(lstatSync(join(workspace, alias)).isSymbolicLink(), `${alias} is a symlink`).toBe(true)
      expect(readlinkSync(join(workspace, alias)), `${alias} points at AGENTS.md`).toBe('AGENTS.md')
      expect(readFileSync(join(workspace, alias), 'utf8')).toBe(INSTRUCTIONS)
    }
    expect(existsSync(join(workspace, PROJECTION_MARKER)), 'nothing to project, so no marker').toBe(false)

    const requests = model.requests()
    expect(requests).toHaveLength(1)
    const body = requests[0]!.body as { __aimock_truncated?: boolean; messages?: { role: string; content: unknown }[] }
    expect(body.__aimock_truncated, 'the journal holds the whole request').toBeUndefined()
    const withInstructions = (body.messages ?? []).filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes(INSTRUCTION_MARKER))
    expect(withInstructions, 'one user message carries the instructions').toHaveLength(1)
    // The CLI read CLAUDE.md (the link) and put its text, which is AGENTS.md's, in a system-reminder block.
    const reminder = /<system-reminder>[\s\S]*?<\/system-reminder>/g
    const block = (withInstructions[0]!.content as string).match(reminder)?.find((b) => b.includes(INSTRUCTION_MARKER))
    expect(block).toContain(`Contents of ${workspace}/CLAUDE.md`)
    expect(block).toContain(INSTRUCTIONS)
  })

  it('connects an MCP server with a bearer header from a workspace secret, calls its tool, and projects once per workspace', async () => {
    const unauthenticated = await fetch(mcp.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) })
    expect(unauthenticated.status, 'the MCP server refuses a request without the token').toBe(401)
    const before = mcp.requests.length

    const secrets = createSecrets({ MCP_TOKEN })
    const { sandbox, instances } = sandboxFor('prov-mcp', 't-mcp', {
      setup: ['git init -q'],
      secrets,
      skills: [mcpSkill('issues', { url: mcp.url, headers: { Authorization: bearer(secrets.MCP_TOKEN) } })],
    })
    const out = await turn({ sandbox, instances, threadId: 't-mcp', prompt: 'Look up issue ISS-7' })
    expect(out.thrown).toBeUndefined()
    expect(runError(out.chunks)).toBeUndefined()
    const init = initEvent(out.chunks)
    expect(init?.mcpServers, 'the CLI connected to the server, so the bearer header reached it').toContainEqual({ name: 'issues', status: 'connected' })
    expect(init?.tools).toContain('mcp__issues__lookup_issue')
    const served = mcp.requests.slice(before)
    expect(served.filter((r) => !r.authorized), 'every request of the CLI carried the token').toEqual([])
    expect(served.map((r) => r.rpc)).toEqual(expect.arrayContaining(['initialize', 'tools/list', 'tools/call']))

    // The model called the MCP tool through the CLI, and the server's answer came back as the tool result.
    expect(ofType(out.chunks as StreamChunk[], 'TOOL_CALL_START').map((c) => [c.toolCallId, c.toolCallName])).toEqual([['toolu_prov_1_issue', 'mcp__issues__lookup_issue']])
    expect(mcp.calls).toEqual([{ id: 'ISS-7' }])
    const [result] = ofType(out.chunks as StreamChunk[], 'TOOL_CALL_RESULT')
    expect(result?.toolCallId).toBe('toolu_prov_1_issue')
    expect(String(result?.content)).toContain(issueAnswer('ISS-7'))
    expect(ofType(out.chunks as StreamChunk[], 'TEXT_MESSAGE_CONTENT').map((c) => c.delta).join('')).toBe('ISS-7 is open: the login button is misaligned on mobile.')

    const { workspace } = await dirsOf(sandbox, instances, 't-mcp')
    const mcpConfig = join(workspace, '.mcp.json')
    const marker = join(workspace, PROJECTION_MARKER)
    expect(JSON.parse(readFileSync(mcpConfig, 'utf8'))).toEqual({ mcpServers: { issues: { type: 'http', url: mcp.url, headers: { Authorization: `Bearer ${MCP_TOKEN}` } } } })
    expect((statSync(mcpConfig).mode & 0o777).toString(8), '.mcp.json holds a resolved secret: owner-only').toBe('600')
    expect(JSON.parse(readFileSync(marker, 'utf8'))['claude-code'], 'the marker holds the workspace hash (plus a keyed digest of the secret values)').toMatch(new RegExp(`^${sandbox.workspace.hash}:[0-9a-f]{32}$`))
    const status = await host('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: workspace })
    expect(status.stdout, 'the projected files are kept out of git status').toBe('')

    // A second run on the same thread resumes the sandbox and leaves the projection as it was.
    const snapshot = (path: string) => {
      const info = statSync(path, { bigint: true })
      return { ino: info.ino, mtimeNs: info.mtimeNs, content: readFileSync(path, 'utf8') }
    }
    const first = { config: snapshot(mcpConfig), marker: snapshot(marker) }
    const again = await turn({ sandbox, instances, threadId: 't-mcp', prompt: 'Is ISS-7 still open?' })
    expect(again.thrown).toBeUndefined()
    expect(runError(again.chunks)).toBeUndefined()
    expect((await dirsOf(sandbox, instances, 't-mcp')).workspace, 'the same sandbox served the second run').toBe(workspace)
    expect(initEvent(again.chunks)?.mcpServers).toContainEqual({ name: 'issues', status: 'connected' })
    expect({ config: snapshot(mcpConfig), marker: snapshot(marker) }, 'the projection was not written again').toEqual(first)
  })

  it('projects skills: agent skill as SKILL.md, git skill linked, file skill written, a missing plugin only warned about', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
    const { sandbox, instances } = sandboxFor('prov-skills', 't-skills', {
      skills: [
        agentSkill('release-notes', { description: 'Writing release notes', content: 'Group changes by package; one line each.' }),
        gitSkill({ repo: `file://${repos}/release-kit.git` }),
        fileSkill({ path: 'docs/hints.md', content: 'Prefer pnpm.\n' }),
      ],
      plugins: ['plugins/not-installed'],
    })
    const logs: LogLine[] = []
    const out = await turn({ sandbox, instances, threadId: 't-skills', prompt: 'Which skills can you use?', logs })
    expect(out.thrown).toBeUndefined()
    expect(runError(out.chunks)).toBeUndefined()

    const { workspace } = await dirsOf(sandbox, instances, 't-skills')
    expect(readFileSync(join(workspace, '.claude/skills/release-notes/SKILL.md'), 'utf8')).toBe('---\nname: release-notes\ndescription: "Writing release notes"\n---\n\nGroup changes by package; one line each.\n')
    const linked = join(workspace, '.claude/skills/release-kit')
    expect(lstatSync(linked).isSymbolicLink(), 'the git skill is linked, not copied').toBe(true)
    expect(realpathSync(linked)).toBe(realpathSync(join(workspace, '.tanstack-skills/release-kit')))
    expect(readFileSync(join(linked, 'SKILL.md'), 'utf8')).toContain('name: release-kit')
    expect(readFileSync(join(workspace, 'docs/hints.md'), 'utf8')).toBe('Prefer pnpm.\n')

    const warnings = warn.mock.calls.map((args) => args.map(String).join(' '))
    expect(warnings).toContainEqual(expect.stringMatching(/^\[claude-code\] plugin "plugins\/not-installed" is not a directory in the sandbox .*; skipped\./))
    // The CLI itself found both projected skills (its own init line, as the adapter logged it).
    expect(cliInitLine(logs)?.skills).toEqual(expect.arrayContaining(['release-notes', 'release-kit']))
  })
})

describe('secrets hygiene', () => {
  it('keeps the git token out of everything, and the MCP token out of everything but the projected .mcp.json', async () => {
    const anonymous = await host('git', ['ls-remote', `${git.url}/app.git`])
    expect(anonymous.code, 'the remote is private: without the token git is refused').not.toBe(0)
    expect(git.requests.at(-1)).toMatchObject({ path: '/app.git/info/refs', status: 401, authorized: false })

    const secrets = createSecrets({ GIT_TOKEN, MCP_TOKEN })
    const instances = new RecordingStore()
    const { sandbox } = sandboxFor(
      'prov-secrets',
      't-secrets',
      {
        source: gitSource({ url: `${git.url}/app.git`, secret: secrets.GIT_TOKEN }),
        secrets,
        skills: [
          mcpSkill('issues', { url: mcp.url, headers: { Authorization: bearer(secrets.MCP_TOKEN) } }),
          gitSkill({ repo: `${git.url}/team-skills.git`, secret: secrets.GIT_TOKEN }),
        ],
      },
      instances,
    )
    const gitBefore = git.requests.length
    const logs: LogLine[] = []
    const out = await turn({ sandbox, instances, threadId: 't-secrets', prompt: 'Inspect the private checkout', logs })
    expect(out.thrown).toBeUndefined()
    expect(runError(out.chunks)).toBeUndefined()

    // The run really used both secrets: the private clones came over HTTP with the token, and the MCP server connected.
    const { sandboxDir, workspace } = await dirsOf(sandbox, instances, 't-secrets')
    expect(readFileSync(join(workspace, 'README.md'), 'utf8')).toBe('private app\n')
    const served = git.requests.slice(gitBefore)
    expect(new Set(served.map((r) => r.path))).toEqual(new Set(['/app.git/info/refs', '/app.git/git-upload-pack', '/team-skills.git/info/refs', '/team-skills.git/git-upload-pack']))
    expect(served.filter((r) => !r.authorized || r.status !== 200), 'every git request carried the token').toEqual([])
    expect(realpathSync(join(workspace, '.claude/skills/triage'))).toBe(realpathSync(join(workspace, '.tanstack-skills/team-skills/skills/triage')))
    expect(initEvent(out.chunks)?.mcpServers).toContainEqual({ name: 'issues', status: 'connected' })
    const [inspected] = ofType(out.chunks as StreamChunk[], 'TOOL_CALL_RESULT')
    expect(String(inspected?.content)).toContain(`origin\t${git.url}/app.git (fetch)`)
    expect(String(inspected?.content)).toContain('private app')

    // (a) On disk, in the whole sandbox directory (workspace, .git, skills, sandbox.json): only the MCP config holds a token.
    expect(existsSync(join(sandboxDir, 'sandbox.json'))).toBe(true)
    expect(countFiles(sandboxDir), 'the search covered a real tree').toBeGreaterThan(20)
    expect(filesContaining(sandboxDir, allNeedles)).toEqual(['workspace/.mcp.json: MCP_TOKEN'])

    // (b) Git config and remotes of the source and of the git skill: plain URLs, no header, no credentials.
    for (const repo of [workspace, join(workspace, '.tanstack-skills/team-skills')]) {
      const config = readFileSync(join(repo, '.git/config'), 'utf8')
      const remotes = await host('git', ['remote', '-v'], { cwd: repo })
      expect(remotes.code).toBe(0)
      expect(remotes.stdout).toMatch(/^origin\thttp:\/\/127\.0\.0\.1:\d+\/(app|team-skills)\.git \(fetch\)$/m)
      expect(hits(config + remotes.stdout, allNeedles)).toEqual([])
      expect(config).not.toMatch(/extraheader|authorization|@127\.0\.0\.1/i)
    }

    // (c) The instance store: the records read back by key (thread and workspace snapshot) and every record ever written.
    const key = sandbox.key({ threadId: 't-secrets', runId: '' })
    const records = { thread: await instances.get(key), snapshot: await instances.get(workspaceSnapshotKey({ definitionId: sandbox.id, provider: sandbox.provider.name, workspaceHash: sandbox.workspace.hash })) }
    expect(records.thread).not.toBeNull()
    expect(instances.written.length).toBeGreaterThan(0)
    expect(hits(safeJson({ records, written: instances.written }), allNeedles)).toEqual([])

    // (d) Every chunk of the stream.
    expect(out.chunks.length).toBeGreaterThan(10)
    expect(out.chunks.flatMap((chunk, i) => hits(JSON.stringify(chunk), allNeedles).map((label) => `chunk ${i} (${chunk.type}): ${label}`))).toEqual([])

    // (e) Every debug log line with its meta, all categories on.
    expect(logs.some((l) => l.message.includes('claude-code line')), 'the CLI lines were logged').toBe(true)
    expect(logs.some((l) => l.message.includes('[tanstack-ai:sandbox]')), 'the sandbox transitions were logged').toBe(true)
    expect(logLeaks(logs)).toEqual([])

    // (g) What reached the model, the Bash tool's output included; (h) the CLI's own HOME and TMPDIR (sessions, config, shell snapshots).
    expect(hits(JSON.stringify(model.requests()), allNeedles)).toEqual([])
    expect(filesContaining(home.dir, allNeedles)).toEqual([])
  })

  const failures: [string, (secrets: Secrets<'GIT_TOKEN' | 'MCP_TOKEN'>) => WorkspaceInput, (error: unknown) => void][] = [
    [
      'a private source repository that does not exist',
      (secrets) => ({ source: gitSource({ url: `${git.url}/does-not-exist.git`, secret: secrets.GIT_TOKEN }), secrets }),
      (error) => {
        expect(error).toBeInstanceOf(WorkspaceBootstrapError)
        expect((error as WorkspaceBootstrapError).reason).toBe('source')
        expect((error as Error).message).toContain(`${git.url}/does-not-exist.git`)
        expect((error as Error).message).toMatch(/not found/)
        expect(SandboxError.isInstance((error as Error).cause), 'the git failure is kept as the cause').toBe(true)
        expect(git.requests.filter((r) => r.path.startsWith('/does-not-exist.git/')), 'the token travelled; the repository is what was missing').toEqual([expect.objectContaining({ authorized: true, status: 404 })])
      },
    ],
    [
      'a private git skill that does not exist',
      (secrets) => ({ secrets, skills: [gitSkill({ repo: `${git.url}/no-such-skills.git`, secret: secrets.GIT_TOKEN })] }),
      (error) => {
        expect(error).toBeInstanceOf(WorkspaceBootstrapError)
        expect((error as WorkspaceBootstrapError).reason).toBe('source')
        expect((error as Error).message).toContain('gitSkill "no-such-skills"')
        expect(git.requests.filter((r) => r.path.startsWith('/no-such-skills.git/'))).toEqual([expect.objectContaining({ authorized: true, status: 404 })])
      },
    ],
    [
      'a setup step that prints both secrets and fails',
      (secrets) => ({ source: gitSource({ url: `${git.url}/app.git`, secret: secrets.GIT_TOKEN }), secrets, setup: ['echo "git=$GIT_TOKEN"; echo "mcp=$MCP_TOKEN" >&2; exit 3'] }),
      (error) => {
        expect(error).toBeInstanceOf(SetupStepFailedError)
        expect((error as SetupStepFailedError).exitCode).toBe(3)
        expect((error as SetupStepFailedError).outputTail, 'the step saw both secrets; its output is redacted').toContain('git=[secret GIT_TOKEN]')
        expect((error as SetupStepFailedError).outputTail).toContain('mcp=[secret MCP_TOKEN]')
      },
    ],
  ]

  it.each(failures)('keeps both tokens out of the error, stream and log of %s', async (what, workspace, check) => {
    const id = `prov-fail-${failures.findIndex(([name]) => name === what)}`
    const threadId = `t-${id}`
    const { sandbox, instances } = sandboxFor(id, threadId, workspace(createSecrets({ GIT_TOKEN, MCP_TOKEN })))
    const rootBefore = existsSync(root) ? readdirSync(root) : []
    const logs: LogLine[] = []
    const out = await turn({ sandbox, instances, threadId, prompt: 'Summarise the project rules', logs })

    expect(out.thrown, 'the failed bootstrap ends the stream with its error').toBeDefined()
    check(out.thrown)
    expect(existsSync(root) ? readdirSync(root) : [], 'the half-made sandbox was destroyed').toEqual(rootBefore)
    expect(await instances.get(sandbox.key({ threadId, runId: '' })), 'a failed sandbox is never recorded').toBeNull()
    expect(logs.some((l) => l.level === 'error'), 'the failure was logged').toBe(true)

    // message, String(), stack, JSON (plain and cycle-safe), util.inspect, and the same down the cause chain.
    expect([...new Set(errorTexts(out.thrown).flatMap((text) => hits(text, allNeedles)))]).toEqual([])
    expect(out.chunks.flatMap((chunk, i) => hits(JSON.stringify(chunk), allNeedles).map((label) => `chunk ${i} (${chunk.type}): ${label}`))).toEqual([])
    expect(logLeaks(logs)).toEqual([])
  })

  it('the leak search finds a token in files, nested log meta and error causes', () => {
    const dir = mkdtempSync(join(work, 'probe-'))
    writeFileSync(join(dir, 'plain.txt'), 'nothing here\n')
    mkdirSync(join(dir, 'nested'))
    writeFileSync(join(dir, 'nested', 'header.txt'), `Authorization: Basic ${Buffer.from(`x-access-token:${GIT_TOKEN}`).toString('base64')}\n`)
    expect(filesContaining(dir, allNeedles)).toContain('nested/header.txt: GIT_TOKEN (git Basic header)')
    expect(filesContaining(dir, allNeedles).filter((hit) => !hit.startsWith('nested/header.txt:'))).toEqual([])
    rmSync(dir, { recursive: true, force: true })

    const cyclic: Record<string, unknown> = { note: 'ok' }
    cyclic.self = cyclic
    const deep = new Error('outer', { cause: new Error(`inner ${MCP_TOKEN}`) })
    expect(logLeaks([{ level: 'error', message: 'failed', meta: { cyclic, error: deep } }])).toEqual(['log 0 "failed": MCP_TOKEN'])
    expect(new Set(errorTexts(deep).flatMap((text) => hits(text, allNeedles)))).toEqual(new Set(['MCP_TOKEN']))
  })
})

/** An instance store that also keeps a copy of every record written to it. */
class RecordingStore extends InMemorySandboxInstanceStore {
  readonly written: SandboxInstanceRecord[] = []

  override async upsert(record: SandboxInstanceRecord): Promise<void> {
    this.written.push({ ...record })
    await super.upsert(record)
  }
}

/** Each log line (message and meta, every rendering) that holds a token form. */
function logLeaks(logs: LogLine[]): string[] {
  return logs.flatMap((line, i) => [...new Set(renderings(line).flatMap((text) => hits(text, allNeedles)))].map((label) => `log ${i} "${line.message.slice(0, 80)}": ${label}`))
}
