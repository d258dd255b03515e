/**
 * chat() tools bridged into the real `claude` CLI inside a Docker sandbox
 * (its binary bind-mounted read-only into the Debian image), against aimock
 * on the host. The bridge listens on the default bridge's host address (not
 * all interfaces) and the CLI reaches it as host.docker.internal: the tool's
 * `execute` runs here on the host, its result reaches the model in the CLI's
 * next request, a throwing tool is a tool error, and a wrong or missing token
 * gets 401 with nothing run. No container, image or CLI process is left.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, afterEach, expect, it } from 'vitest'
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { CLAUDE_CODE_INIT_EVENT, claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, TOOL_BRIDGE_RESULT_EVENT, type SandboxDefinition, type SandboxHandle } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { claudeBinary, startFakeModel, type FakeModel } from '../src/aimock.js'
import { BRIDGE_FIXTURES, postToolCall, provisionerSpy, runWithTools, toolResultsOf } from './helpers/bridge.js'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { ofType, processesWithHome } from './helpers/run-claude.js'

const IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `cc-bridge-${randomUUID().slice(0, 8)}` }
const CLI = '/opt/claude/claude'
const reason = await dockerMissing([IMAGE])

describeWithDocker('tool bridge with the real CLI in a Docker sandbox', reason, () => {
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
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
    expect(allHomes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
  }, 120_000)

  /** The fake model on the bridge's host address, and the CLI's environment with a HOME inside the container. */
  async function setup(): Promise<{ model: FakeModel; host: string; options: ClaudeCodeOptions }> {
    const host = (await bridgeHostAddress())!
    const model = await startFakeModel(BRIDGE_FIXTURES as never, { host })
    started.models.push(model)
    const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
    allHomes.push(home)
    const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
    return { model, host, options: { executable: CLI, env } }
  }

  function sandboxFor(id: string, threadId: string): { sandbox: SandboxDefinition; handles: SandboxHandle[] } {
    const handles: SandboxHandle[] = []
    const sandbox = defineSandbox({ id, provider, lifecycle: { snapshot: 'none' }, hooks: { onReady: (handle) => void handles.push(handle) } })
    started.sandboxes.push({ sandbox, threadId })
    return { sandbox, handles }
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })

  function orderTools(onCall?: () => Promise<void>) {
    const calls: { tool: string; args: unknown }[] = []
    const lookup = toolDefinition({ name: 'lookup_order', description: 'Look up an order by id.', inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] } }).server(async (args) => {
      const { orderId } = args as { orderId: string }
      calls.push({ tool: 'lookup_order', args: { orderId } })
      await onCall?.()
      return { orderId, status: 'shipped', host: process.pid }
    })
    const charge = toolDefinition({ name: 'charge_card', description: 'Charge the card.', inputSchema: { type: 'object', properties: { cents: { type: 'integer' } }, required: ['cents'] } }).server(async (args) => {
      const { cents } = args as { cents: number }
      calls.push({ tool: 'charge_card', args: { cents } })
      throw new Error(`card declined for ${cents} cents`)
    })
    return { calls, tools: [lookup, charge] }
  }

  it('runs a bridged tool on the host for the CLI in the container, and returns its result', async () => {
    const { model, host, options } = await setup()
    const { sandbox, handles } = sandboxFor('bridge-docker-lookup', 't-lookup')
    const spy = provisionerSpy()
    const { calls, tools } = orderTools()

    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-lookup', messages: [user('Where is order A-17?')], tools, middleware: [spy.middleware] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Order A-17 has shipped.')
    expect(calls, 'execute ran in this (host) process').toEqual([{ tool: 'lookup_order', args: { orderId: 'A-17' } }])
    expect(toolResultsOf(model.requests()[1]!)).toEqual([{ toolCallId: 'toolu_bridge_lookup', content: JSON.stringify({ orderId: 'A-17', status: 'shipped', host: process.pid }) }])
    const init = ofType(out.chunks, 'CUSTOM').find((c) => c.name === CLAUDE_CODE_INIT_EVENT)!
    expect(init.value.mcpServers).toContainEqual({ name: 'tanstack', status: 'connected' })

    // The container reached the host as host.docker.internal; the host listened on the bridge address only.
    const [bridge] = spy.bridges
    expect(bridge!.url).toMatch(/^http:\/\/host\.docker\.internal:\d+\/mcp$/)
    expect(new URL(bridge!.hostUrl).hostname).toBe(host)
    expect(await handles[0]!.hostAccess!()).toEqual({ hostname: 'host.docker.internal', listenAddress: host })
    expect(bridge!.closed).toBe(true)
    await expect(postToolCall(bridge!.hostUrl, `Bearer ${bridge!.token}`, 'lookup_order', { orderId: 'A-17' }), 'nothing listens after the run').rejects.toThrow()
  })

  it('returns a tool that throws on the host to the CLI in the container as a tool error', async () => {
    const { model, options } = await setup()
    const { sandbox } = sandboxFor('bridge-docker-throw', 't-throw')
    const { calls, tools } = orderTools()

    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-throw', messages: [user('Charge the card')], tools })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('The charge failed.')
    expect(calls).toEqual([{ tool: 'charge_card', args: { cents: 1999 } }])
    expect(toolResultsOf(model.requests()[1]!)[0]!.content).toContain('card declined for 1999 cents')
    expect(ofType(out.chunks, 'CUSTOM').find((c) => c.name === TOOL_BRIDGE_RESULT_EVENT)!.value).toMatchObject({ isError: true, content: 'card declined for 1999 cents' })
  })

  it('refuses a wrong or missing token with 401 while the run is live, and nothing runs', async () => {
    const { options } = await setup()
    const { sandbox } = sandboxFor('bridge-docker-token', 't-token')
    const spy = provisionerSpy()
    const statuses: number[] = []
    const { calls, tools } = orderTools(async () => {
      const bridge = spy.bridges[0]!
      for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${bridge.token.slice(1)}`]) statuses.push((await postToolCall(bridge.hostUrl, authorization, 'charge_card', { cents: 1 })).status)
    })
    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-token', messages: [user('Where is order A-17?')], tools, middleware: [spy.middleware] })
    expect(out.error).toBeUndefined()
    expect(statuses).toEqual([401, 401, 401])
    expect(calls.map((c) => c.tool), 'charge_card never ran').toEqual(['lookup_order'])
  })

  it('ends the run with a clear error when the container cannot reach the host (network none)', async () => {
    const { options } = await setup()
    const isolated = dockerSandbox({ image: IMAGE, labels: RUN, network: 'none', killGraceMs: 500, mounts: [{ source: claudeBinary(), target: CLI, readOnly: true }] })
    const sandbox = defineSandbox({ id: 'bridge-docker-none', provider: isolated, lifecycle: { snapshot: 'none' } })
    started.sandboxes.push({ sandbox, threadId: 't-none' })
    const { calls, tools } = orderTools()
    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-none', messages: [user('Where is order A-17?')], tools })
    expect(out.error?.code).toBe('adapter_error')
    expect(out.error?.message).toContain('reports that its processes cannot reach the host')
    expect(out.error?.message).toContain('inject a ToolBridgeProvisioner')
    expect(calls).toEqual([])
  })
})
