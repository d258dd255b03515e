/**
 * Declarative provisioning and policy with the real `codex` CLI against
 * aimock, in local-process sandboxes: instructions (AGENTS.md) and an agent
 * skill reach the model, an MCP skill with a bearer header from a workspace
 * secret connects to a real MCP server through the projected
 * `.codex/config.toml` (kept owner-only, next to the repository's own
 * settings), plugins are skipped with a warning, a denied command is refused
 * by Codex itself, and a policy without file writes runs Codex read-only.
 * Every server, sandbox, HOME and CLI process is removed; afterAll checks.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { CODEX_CONFIG, CODEX_CONFIG_BLOCK, CODEX_POLICY_RULES, codexText, type CodexOptions } from '@tanstack/ai-codex'
import {
  agentSkill,
  bearer,
  createSecrets,
  createToolBridgeCore,
  defineSandbox,
  defineSandboxPolicy,
  defineWorkspace,
  fileSkill,
  mcpSkill,
  startHostToolBridge,
  type HostToolBridge,
  type SandboxDefinition,
  type SandboxHandle,
  type SandboxPolicy,
  type WorkspaceInput,
} from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { allTexts, codexBinary, FAKE_MODEL, makeCodexHome, startFakeModel, type CodexHome, type FakeModel } from '../src/aimock.js'
import { ofType, processesWithHome, runCodex } from './helpers/run-codex.js'

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'codex-provisioning-e2e-'))
const provider = localProcessSandbox({ root })
const executable = codexBinary()

const started: { models: FakeModel[]; homes: CodexHome[]; bridges: HostToolBridge[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], bridges: [], sandboxes: [] }
const allHomes: string[] = []

afterEach(async () => {
  vi.restoreAllMocks()
  for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  for (const bridge of started.bridges.splice(0)) await bridge.close()
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

async function setup(fixture: string): Promise<{ model: FakeModel; options: CodexOptions }> {
  const model = await startFakeModel(join(fixtures, fixture))
  started.models.push(model)
  const home = makeCodexHome(model.url, 'codex-provisioning-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { model, options: { executable, env: home.env() } }
}

/** A sandbox with a workspace and policy, destroyed after the test; `handles` collects the handles it was ready with. */
function sandboxFor(id: string, threadId: string, input: { workspace?: WorkspaceInput; policy?: SandboxPolicy }): { sandbox: SandboxDefinition; handles: SandboxHandle[] } {
  const handles: SandboxHandle[] = []
  const sandbox = defineSandbox({ id, provider, ...(input.workspace ? { workspace: defineWorkspace(input.workspace) } : {}), ...(input.policy ? { policy: input.policy } : {}), hooks: { onReady: (handle) => void handles.push(handle) } })
  started.sandboxes.push({ sandbox, threadId })
  return { sandbox, handles }
}

/** A real MCP server (the core's HTTP tool bridge) serving `lookup_issue`, accepting only `token`. */
async function issuesServer(token: string): Promise<{ server: HostToolBridge; calls: unknown[] }> {
  const calls: unknown[] = []
  const lookup = { name: 'lookup_issue', description: 'Look up an issue by id.', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] }, execute: (args: unknown) => (calls.push(args), 'ISS-7: "Login button misaligned on mobile", open.') }
  const server = await startHostToolBridge({ core: createToolBridgeCore({ tools: [lookup], name: 'issues' }), token })
  started.bridges.push(server)
  return { server, calls }
}

const user = (content: string): ModelMessage => ({ role: 'user', content })

describe('codex projection with the real CLI', () => {
  it('projects instructions, skills and an MCP server with a secret header, keeps the repository config, and skips plugins', async () => {
    const token = `mcptok-${randomBytes(12).toString('hex')}`
    const { server, calls } = await issuesServer(token)
    const { model, options } = await setup('provisioning.json')
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined)
    const secrets = createSecrets({ ISSUES_TOKEN: token })
    const { sandbox, handles } = sandboxFor('cxp-project', 't-project', {
      workspace: {
        secrets,
        instructions: 'Always cite the issue id. INSTRUCTIONS-MARKER',
        skills: [
          agentSkill('release-notes', { description: 'Writing release notes', content: 'Group changes by package. SKILL-MARKER' }),
          mcpSkill('issues', { url: server.url, headers: { Authorization: bearer(secrets.ISSUES_TOKEN) } }),
          fileSkill({ path: '.codex/config.toml', content: '# the repository\'s own settings\nmodel_reasoning_effort = "low"\n' }),
        ],
        plugins: ['@acme/codex-plugin'],
      },
    })
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-project', messages: [user('Look up issue ISS-7')] })

    expect(out.error).toBeUndefined()
    expect(calls, 'Codex called the MCP server with the bearer header from the secret').toEqual([{ id: 'ISS-7' }])
    expect(ofType(out.chunks, 'TOOL_CALL_START').map((c) => c.toolCallName)).toEqual(['mcp__issues__lookup_issue'])
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT')[0]!.content).toBe('ISS-7: "Login button misaligned on mobile", open.')
    const first = allTexts(model.requests()[0]!)
    expect(first, 'AGENTS.md reached the model').toContain('INSTRUCTIONS-MARKER')
    expect(first, 'the agent skill is listed for the model').toContain('release-notes')
    expect(first).toContain('Writing release notes')
    expect(first, 'no secret reaches the model').not.toContain(token)

    const workspace = handles[0]!.workspaceRoot
    const config = readFileSync(join(workspace, CODEX_CONFIG), 'utf8')
    expect(config).toBe(`${CODEX_CONFIG_BLOCK}\n# mcp_servers from the definition: ["issues"]\nmodel_reasoning_effort = "low"\n\n[mcp_servers.issues]\nurl = "${server.url}"\ndefault_tools_approval_mode = "approve"\n\n[mcp_servers.issues.http_headers]\nAuthorization = "Bearer ${token}"\n`)
    expect(statSync(join(workspace, CODEX_CONFIG)).mode & 0o777, 'the config holds a secret: owner-only').toBe(0o600)
    expect(readFileSync(join(workspace, '.codex/skills/release-notes/SKILL.md'), 'utf8')).toContain('SKILL-MARKER')
    expect(warn.mock.calls.flat().join('\n')).toContain('plugin "@acme/codex-plugin" skipped')
    expect(JSON.stringify(out.chunks), 'no secret in the stream').not.toContain(token)
  })

  it('refuses a command the policy denies, in Codex itself', async () => {
    const { model, options } = await setup('policy.json')
    const { sandbox, handles } = sandboxFor('cxp-deny', 't-deny', { policy: defineSandboxPolicy({ commands: { deny: ['git push *'] } }) })
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-deny', messages: [user('Push the branch')] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('The push was refused.')
    expect(ofType(out.chunks, 'TOOL_CALL_START'), 'Codex reports no item for a refused command').toEqual([])
    expect(allTexts(model.requests()[1]!), 'the model is told why, in the policy\'s words').toMatch(/rejected: sandbox policy: commands\.deny \W+git push \*/)
    const workspace = handles[0]!.workspaceRoot
    expect(readFileSync(join(workspace, CODEX_POLICY_RULES), 'utf8')).toContain('prefix_rule(pattern=["git", "push"], decision="forbidden"')

  })

  it('removes a rules file left from an earlier policy when the policy has no command rules', async () => {
    const { options } = await setup('text.json')
    const stale = 'prefix_rule(pattern=["echo"], decision="forbidden")\n'
    const { sandbox, handles } = sandboxFor('cxp-stale', 't-stale', { workspace: { skills: [fileSkill({ path: CODEX_POLICY_RULES, content: stale })] } })
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-stale', messages: [user('Say hello')] })
    expect(out.error).toBeUndefined()
    expect(existsSync(join(handles[0]!.workspaceRoot, CODEX_POLICY_RULES)), 'no rules, no file').toBe(false)
  })

  it('runs Codex read-only when the policy forbids file writes', async () => {
    // Codex's own sandbox keeps an empty per-user folder in /tmp; remove it if this test made it.
    const daemonDir = `/tmp/codex-daemon-${process.getuid?.() ?? 0}`
    const hadDaemonDir = existsSync(daemonDir)
    onTestFinished(() => {
      if (!hadDaemonDir) rmSync(daemonDir, { recursive: true, force: true })
    })
    const { model, options } = await setup('read-only.json')
    const { sandbox, handles } = sandboxFor('cxp-ro', 't-ro', { policy: defineSandboxPolicy({ capabilities: { fileWrite: false } }) })
    const out = await runCodex({ adapter: codexText(FAKE_MODEL, options), sandbox, threadId: 't-ro', messages: [user('Write blocked.txt')] })
    expect(out.error).toBeUndefined()
    expect(existsSync(join(handles[0]!.workspaceRoot, 'blocked.txt')), 'nothing was written').toBe(false)
    expect(allTexts(model.requests()[1]!)).toMatch(/Read-only file system|Permission denied|Operation not permitted/)
  })
})
