/**
 * A repository that ships its own `.codex/config.toml` with `[mcp_servers.*]`
 * tables, plus a workspace definition with an MCP skill, against the real
 * `codex` CLI and aimock in local-process sandboxes. The projection parses
 * and merges the file (smol-toml): Codex loads the result without a config
 * error and calls a tool of the definition's server and of the repository's
 * own server. On a name clash the definition's server wins; the repository's
 * other servers and settings (floats and integers, headers, profiles) stay.
 * The merged file is owner-only and out of `git status`. Appending tables to
 * the file's text, as before, made both layouts below unloadable (duplicate
 * key; an inline `mcp_servers` table extended by a header).
 */
import { randomBytes } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { CODEX_CONFIG, CODEX_CONFIG_BLOCK, codexText } from '@tanstack/ai-codex'
import { bearer, createSecrets, createToolBridgeCore, defineSandbox, defineWorkspace, fileSkill, mcpSkill, startHostToolBridge, type HostToolBridge, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { codexBinary, FAKE_MODEL, makeCodexHome, startFakeModel, type CodexHome, type FakeModel } from '../src/aimock.js'
import { ofType, processesWithHome, runCodex } from './helpers/run-codex.js'

const fixture = fileURLToPath(new URL('../fixtures/config-merge.json', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'codex-config-merge-e2e-'))
const provider = localProcessSandbox({ root })
const executable = codexBinary()
const PROMPT = 'Check ISS-7 and the repository server'

const started: { models: FakeModel[]; homes: CodexHome[]; servers: HostToolBridge[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], servers: [], sandboxes: [] }
const allHomes: string[] = []

afterEach(async () => {
  vi.restoreAllMocks()
  for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  for (const server of started.servers.splice(0)) await server.close()
  for (const model of started.models.splice(0)) await model.stop()
  for (const home of started.homes.splice(0)) home.cleanup()
})

afterAll(() => {
  const leftDirs = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(leftDirs, 'every sandbox directory is removed').toEqual([])
  expect(allHomes.filter((dir) => existsSync(dir)), 'every CLI HOME is removed').toEqual([])
  expect(allHomes.flatMap(processesWithHome), 'no CLI process or tool process is left').toEqual([])
})

/** A real MCP server (core's HTTP tool bridge) named `name`, serving one tool, accepting only its own random token. */
async function mcpServer(name: string, tool: string, answer: string): Promise<{ server: HostToolBridge; calls: unknown[] }> {
  const calls: unknown[] = []
  const execute = (args: unknown) => (calls.push(args), answer)
  const server = await startHostToolBridge({ core: createToolBridgeCore({ tools: [{ name: tool, description: `${tool} of ${name}`, inputSchema: { type: 'object', properties: { id: { type: 'string' } } }, execute }], name }), token: `${name}-${randomBytes(12).toString('hex')}` })
  started.servers.push(server)
  return { server, calls }
}

/** Both servers, the fake model and a HOME; `repoConfig` is the repository's `.codex/config.toml` for the repository server's URL and token. */
async function scenario(id: string, repoConfig: (repo: HostToolBridge) => string) {
  const issues = await mcpServer('issues', 'lookup_issue', 'ISS-7: open.')
  const repo = await mcpServer('repo_server', 'repo_status', 'repo server: ready.')
  const model = await startFakeModel(fixture)
  started.models.push(model)
  const home = makeCodexHome(model.url, 'codex-config-merge-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  const secrets = createSecrets({ ISSUES_TOKEN: issues.server.token })
  const handles: SandboxHandle[] = []
  const sandbox = defineSandbox({
    id,
    provider,
    workspace: defineWorkspace({
      secrets,
      setup: ['git init -q'],
      // The repository's own file: written at bootstrap, before the projection merges into it.
      skills: [fileSkill({ path: CODEX_CONFIG, content: repoConfig(repo.server) }), mcpSkill('issues', { url: issues.server.url, headers: { Authorization: bearer(secrets.ISSUES_TOKEN) } })],
    }),
    hooks: { onReady: (handle) => void handles.push(handle) },
  })
  started.sandboxes.push({ sandbox, threadId: `t-${id}` })
  const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
  // On local-process (no isolation) Codex keeps its own sandbox and would refuse the repository's own server's tool
  // (only the definition's servers are approved up front); opting out here keeps this test about the merge itself.
  const out = await runCodex({ adapter: codexText(FAKE_MODEL, { executable, env: home.env(), sandboxMode: 'bypass' }), sandbox, threadId: `t-${id}`, messages: [{ role: 'user', content: PROMPT }] })
  return { out, issues, repo, workspace: handles[0]!.workspaceRoot, warnings: warn.mock.calls.flat().join('\n'), token: issues.server.token }
}

function expectBothToolsCalled(run: Awaited<ReturnType<typeof scenario>>): void {
  expect(run.out.error, 'Codex loaded the merged config and finished the turn').toBeUndefined()
  expect(ofType(run.out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['mcp__issues__lookup_issue', 'mcp__repo_server__repo_status'])
  expect(ofType(run.out.chunks, 'TOOL_CALL_RESULT').map((c) => c.content)).toEqual(['ISS-7: open.', 'repo server: ready.'])
  expect(run.issues.calls, "the definition's server, with the bearer header from the secret").toEqual([{ id: 'ISS-7' }])
  expect(run.repo.calls, "the repository's own server, with the header from the repository's file").toEqual([{}])
  expect(run.out.text).toBe('ISS-7 is open and the repository server is ready.')
  const path = join(run.workspace, CODEX_CONFIG)
  expect(statSync(path).mode & 0o777, 'the merged file holds a secret: owner-only').toBe(0o600)
  expect(execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: run.workspace, encoding: 'utf8' }), 'the merged file is out of git status').not.toContain('config.toml')
  expect(JSON.stringify(run.out.chunks), 'no secret in the stream').not.toContain(run.token)
}

describe('codex merges the repository .codex/config.toml with the definition, and the real CLI loads it', () => {
  it('keeps a repository server of another name and the settings, and the definition wins a name clash', async () => {
    const run = await scenario('cxm-tables', (repo) =>
      [
        "# the repository's own settings",
        'model_reasoning_effort = "low"',
        '',
        '[mcp_servers.repo_server]',
        `url = "${repo.url}"`,
        `http_headers = { "Authorization" = "Bearer ${repo.token}" }`,
        'startup_timeout_sec = 20.0',
        'tool_timeout_sec = 60',
        '',
        '# a stale entry of the same name as the definition\'s server: the definition wins',
        '[mcp_servers.issues]',
        'url = "http://127.0.0.1:9/not-listening"',
        '',
        '[profiles.fast]',
        'model_reasoning_effort = "minimal"',
        '',
      ].join('\n'),
    )
    expectBothToolsCalled(run)
    const text = readFileSync(join(run.workspace, CODEX_CONFIG), 'utf8')
    expect(text.split('\n').slice(0, 2)).toEqual([CODEX_CONFIG_BLOCK, '# mcp_servers from the definition: ["issues"]'])
    expect(text).toContain('model_reasoning_effort = "low"\n')
    expect(text, 'a float stays a float').toContain('startup_timeout_sec = 20.0\ntool_timeout_sec = 60\n')
    expect(text).toContain('[profiles.fast]\nmodel_reasoning_effort = "minimal"\n')
    expect(text, 'the stale entry is gone').not.toContain('not-listening')
    expect(run.warnings).toContain(`[codex] the repository's [mcp_servers.issues] in ${CODEX_CONFIG} is replaced by the workspace definition's MCP server "issues".`)
  }, 120_000)

  it('merges into an inline mcp_servers table', async () => {
    const run = await scenario('cxm-inline', (repo) => `model_reasoning_effort = "low"\nmcp_servers = { repo_server = { url = "${repo.url}", http_headers = { Authorization = "Bearer ${repo.token}" } } }\n`)
    expectBothToolsCalled(run)
  }, 120_000)
})
