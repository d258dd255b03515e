/**
 * Provisioning and policy with the real `claude` CLI inside a Docker sandbox
 * (its binary bind-mounted read-only into the Debian image), against aimock on
 * the host: instructions reach the model's request; an MCP skill with a bearer
 * header from a workspace secret connects, and its token is only in the
 * owner-only `.mcp.json` (not elsewhere in the container's filesystem, its
 * config, or the stream); a command the policy denies is refused by the CLI.
 * The fake model listens on the bridge's host address; the MCP test server
 * listens on loopback only, so a relay on that address forwards to it. Nothing
 * with this file's run label is left (no snapshot is taken), nor a CLI process.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { CLAUDE_CODE_INIT_EVENT, CLAUDE_CODE_PERMISSION_DENIALS_EVENT, claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { bearer, createSecrets, defineSandbox, defineSandboxPolicy, defineWorkspace, mcpSkill, type SandboxDefinition, type SandboxHandle, type SandboxPolicy, type WorkspaceInput } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { claudeBinary, startFakeModel, type FakeModel } from '../src/aimock.js'
import { hits, needlesFor, type Needle } from '../src/leak-search.js'
import { issueAnswer, startMcpServer, type McpTestServer } from '../src/mcp-server.js'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing, engine } from '@testing/support/docker-engine'
import { ofType, processesWithHome, runClaude, type AnyChunk } from './helpers/run-claude.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `cc-prov-docker-${randomUUID().slice(0, 8)}` }
/** Where the host's CLI binary appears in every container; the folder name is unique, so the leak search can skip it by name. */
const CLI_DIR = 'claude-cli-under-test'
const CLI = `/opt/${CLI_DIR}/claude`
const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const reason = await dockerMissing([IMAGE])

const INSTRUCTION_MARKER = 'house-rule-5c1d'
const INSTRUCTIONS = `# House rules\n\nRule 7 (${INSTRUCTION_MARKER}): answer briefly and cite the rule number.\n`

describeWithDocker('provisioning and policy with the real CLI in a Docker sandbox', reason, () => {
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500, mounts: [{ source: claudeBinary(), target: CLI, readOnly: true }] })
  const started: { stops: (() => Promise<void>)[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { stops: [], sandboxes: [] }
  const allHomes: string[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    for (const stop of started.stops.splice(0)) await stop()
  })

  afterAll(async () => {
    const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests, and no snapshot was taken').toEqual({ containers: [], images: [], volumes: [] })
    expect(await dockerLeftovers(label)).toEqual({ containers: [], images: [], volumes: [] })
    expect(allHomes.flatMap(processesWithHome), 'no CLI process or tool process is left').toEqual([])
  }, 120_000)

  /** A fake model on the bridge's host address, and the CLI's environment: a unique HOME in the container, the model as host.docker.internal, no retries. */
  async function setup(fixture: string): Promise<{ model: FakeModel; options: ClaudeCodeOptions }> {
    const model = await startFakeModel(join(fixtures, fixture), { host: (await bridgeHostAddress())! })
    started.stops.push(() => model.stop())
    const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
    allHomes.push(home)
    const env = {
      HOME: home,
      CLAUDE_CONFIG_DIR: `${home}/.claude`,
      ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`,
      ANTHROPIC_API_KEY: 'test-key-not-a-secret',
      CLAUDE_CODE_MAX_RETRIES: '0',
    }
    return { model, options: { executable: CLI, env } }
  }

  /** A sandbox definition (no snapshots) destroyed after the test; `handles` collects every handle it was ready with. */
  function sandboxFor(id: string, threadId: string, workspace: WorkspaceInput, policy?: SandboxPolicy): { sandbox: SandboxDefinition; handles: SandboxHandle[] } {
    const handles: SandboxHandle[] = []
    const sandbox = defineSandbox({
      id,
      provider,
      workspace: defineWorkspace(workspace),
      ...(policy ? { policy } : {}),
      lifecycle: { snapshot: 'none' },
      hooks: { onReady: (handle) => void handles.push(handle) },
    })
    started.sandboxes.push({ sandbox, threadId })
    return { sandbox, handles }
  }

  /** The MCP test server, reachable from a bridged container through a relay on the bridge's host address. */
  async function startReachableMcp(token: string): Promise<{ mcp: McpTestServer; port: number }> {
    const mcp = await startMcpServer({ token })
    started.stops.push(() => mcp.stop())
    const relay = await startRelay((await bridgeHostAddress())!, Number(new URL(mcp.url).port))
    started.stops.push(relay.stop)
    return { mcp, port: relay.port }
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })

  it("writes instructions as AGENTS.md with CLAUDE.md linked to it, and the CLI in the container sends them in the model's request", async () => {
    const { model, options } = await setup('provisioning.json')
    const { sandbox, handles } = sandboxFor('ccdp-instructions', 't-instructions', { instructions: INSTRUCTIONS })
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-instructions', messages: [user('Summarise the project rules')] })
    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Answer briefly and cite the rule number.')

    const handle = handles[0]!
    expect(handle.workspaceRoot).toBe('/workspace')
    expect(await handle.fs.read('AGENTS.md')).toBe(INSTRUCTIONS)
    expect((await handle.process.exec('readlink CLAUDE.md')).stdout.trim(), 'CLAUDE.md points at AGENTS.md').toBe('AGENTS.md')
    expect(await handle.fs.read('CLAUDE.md')).toBe(INSTRUCTIONS)

    const requests = model.requests()
    expect(requests).toHaveLength(1)
    const body = requests[0]!.body as { __aimock_truncated?: boolean; messages?: { role: string; content: unknown }[] }
    expect(body.__aimock_truncated, 'the journal holds the whole request').toBeUndefined()
    const withInstructions = (body.messages ?? []).filter((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes(INSTRUCTION_MARKER))
    expect(withInstructions, 'one user message carries the instructions').toHaveLength(1)
    // The CLI read CLAUDE.md in the container's workspace and put its text in a system-reminder block.
    const block = (withInstructions[0]!.content as string).match(/<system-reminder>[\s\S]*?<\/system-reminder>/g)?.find((b) => b.includes(INSTRUCTION_MARKER))
    expect(block).toContain('Contents of /workspace/CLAUDE.md')
    expect(block).toContain(INSTRUCTIONS)
  })

  it('connects an MCP server with a bearer header from a workspace secret, and keeps the token only in the owner-only .mcp.json', async () => {
    const MCP_TOKEN = `mcptok-${randomBytes(16).toString('hex')}`
    const needles = needlesFor('MCP_TOKEN', MCP_TOKEN)
    const { model, options } = await setup('provisioning.json')
    const { mcp, port } = await startReachableMcp(MCP_TOKEN)
    const url = `http://host.docker.internal:${port}/mcp`
    const secrets = createSecrets({ MCP_TOKEN })
    const { sandbox, handles } = sandboxFor('ccdp-mcp', 't-mcp', { secrets, skills: [mcpSkill('issues', { url, headers: { Authorization: bearer(secrets.MCP_TOKEN) } })] })
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-mcp', messages: [user('Look up issue ISS-7')] })
    expect(out.error).toBeUndefined()

    const init = ofType(out.chunks, 'CUSTOM').find((c) => c.name === CLAUDE_CODE_INIT_EVENT)?.value as { tools: string[]; mcpServers: { name: string; status: string }[] } | undefined
    expect(init?.mcpServers, 'the CLI in the container connected, so the bearer header reached the server').toContainEqual({ name: 'issues', status: 'connected' })
    expect(init?.tools).toContain('mcp__issues__lookup_issue')
    expect(mcp.requests.length, 'the server was reached through the relay').toBeGreaterThan(0)
    expect(mcp.requests.filter((r) => !r.authorized), 'every request of the CLI carried the token').toEqual([])
    expect(mcp.requests.map((r) => r.rpc)).toEqual(expect.arrayContaining(['initialize', 'tools/list', 'tools/call']))
    expect(mcp.calls).toEqual([{ id: 'ISS-7' }])
    const [result] = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(result?.toolCallId).toBe('toolu_prov_1_issue')
    expect(String(result?.content)).toContain(issueAnswer('ISS-7'))
    expect(out.text).toBe('ISS-7 is open: the login button is misaligned on mobile.')

    // The projected config: owner-only, and the one place the token is.
    const handle = handles[0]!
    expect(JSON.parse(await handle.fs.read('.mcp.json'))).toEqual({ mcpServers: { issues: { type: 'http', url, headers: { Authorization: `Bearer ${MCP_TOKEN}` } } } })
    expect((await handle.process.exec('stat -c %a /workspace/.mcp.json')).stdout.trim(), '.mcp.json holds a resolved secret: owner-only').toBe('600')
    expect(await containerFilesHolding(handle, needles), 'the token is nowhere else in the container filesystem (the CLI HOME included)').toEqual(['/workspace/.mcp.json'])

    // The container's config, the stream, and what reached the model.
    const inspect = await engine(`/containers/${handle.id}/json`)
    expect(inspect.status).toBe(200)
    expect(inspect.body.Config.Env, 'the container env is read').toEqual(expect.arrayContaining([expect.stringMatching(/^PATH=/)]))
    expect(hits(JSON.stringify(inspect.body.Config.Env), needles), 'secrets are never part of Config.Env').toEqual([])
    expect(hits(JSON.stringify(inspect.body), needles), 'nor of anything else the engine reports about the container').toEqual([])
    expect(hits(JSON.stringify(model.requests()), needles), 'nor did the model see it').toEqual([])
    expect(out.chunks.length).toBeGreaterThan(10)
    const leaks = (out.chunks as AnyChunk[]).flatMap((chunk, i) => hits(JSON.stringify(chunk), needles).map((label) => `chunk ${i} (${[chunk.type, chunk.name].filter(Boolean).join(' ')}): ${label}`))
    expect(leaks, 'no chunk of the stream holds the token').toEqual([])
  })

  it('refuses a command the sandbox policy denies, in the CLI in the container, and reports the denial', async () => {
    const { options } = await setup('policy.json')
    const policy = defineSandboxPolicy({ default: 'allow', commands: { deny: ['git push *'] } })
    const { sandbox, handles } = sandboxFor('ccdp-policy', 't-policy', { setup: ['git init -q'] }, policy)
    const out = await runClaude({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-policy', messages: [user('Push the branch')] })
    expect(out.error).toBeUndefined()
    expect(await handles[0]!.fs.exists('.git/HEAD'), 'the setup ran in the container').toBe(true)

    const [start] = ofType(out.chunks, 'TOOL_CALL_START')
    expect(start?.toolCallName).toBe('Bash')
    const [result] = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(String(result?.content)).toMatch(/permission|denied|not allowed/i)
    expect(String(result?.content), 'git never ran (it would have said there is no origin)').not.toMatch(/does not appear to be a git repository/)
    const [denials] = ofType(out.chunks, 'CUSTOM').filter((c) => c.name === CLAUDE_CODE_PERMISSION_DENIALS_EVENT)
    expect(denials?.value.denials).toEqual([expect.objectContaining({ toolName: 'Bash', toolUseId: 'toolu_policy_1_push', input: expect.objectContaining({ command: 'git push origin main' }) })])
    expect(out.text).toContain('refused by policy')
  })
})

/**
 * Every file in the container holding a needle, by `grep -r` through the
 * handle, skipping /proc, /sys, /dev and the mounted CLI. Each needle's first
 * character is bracketed, so the command line (and any copy of it) does not
 * hold the needle itself.
 */
async function containerFilesHolding(handle: SandboxHandle, needles: readonly Needle[]): Promise<string[]> {
  const patterns = needles.map((n) => `-e '[${n.text[0]}]${n.text.slice(1)}'`).join(' ')
  const command = `grep -rlsD skip --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=${CLI_DIR} ${patterns} / ; true`
  return (await handle.process.exec(command)).stdout.split('\n').filter(Boolean).sort()
}

/** A TCP relay listening on `address` (a free port) that forwards every connection to 127.0.0.1:`targetPort`. */
async function startRelay(address: string, targetPort: number): Promise<{ port: number; stop: () => Promise<void> }> {
  const sockets = new Set<Socket>()
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  }
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1')
    track(client)
    track(upstream)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, address, () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const socket of sockets) socket.destroy()
      }),
  }
}
