/**
 * chat() tools bridged into the real `claude` CLI inside a Daytona sandbox on
 * the stand-in, which cannot reach this host by an address of it
 * (`hostAccess()` is undefined): the bridge is served by `routedToolBridge`
 * from an app server on the Docker bridge's host address, under a path the
 * CLI reaches only through the URL the provisioner gave it
 * (host.docker.internal, as a public URL or tunnel would be). The tool's
 * `execute` runs here, its result reaches the model, the route is gone after
 * the run; without the routed bridge the run ends with an error naming it.
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest'
import { defineChatMiddleware, toolDefinition, type ModelMessage } from '@tanstack/ai'
import { claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, provideToolBridgeProvisioner, routedToolBridge, ToolBridgeProvisionerCapability, type ProvisionedToolBridge, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { daytonaSandbox } from '@tanstack/ai-sandbox-daytona'
import { DAYTONA_IMAGE, startDaytonaStandin } from '@testing/daytona-standin'
import { bridgeHostAddress, describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { claudeBinary, startFakeModel, type FakeModel } from '../src/aimock.js'
import { BRIDGE_FIXTURES, postToolCall, runWithTools, toolResultsOf } from './helpers/bridge.js'
import { processesWithHome } from './helpers/run-claude.js'

const RUN = { 'tanstack-test.run': `cc-bridge-daytona-${randomUUID().slice(0, 8)}` }
const CLI = '/opt/claude/claude'
const MOUNT = '/apps/tool-bridge'
const reason = await dockerMissing([DAYTONA_IMAGE])
const standin = reason === null ? await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: RUN, mounts: [{ source: claudeBinary(), target: CLI, readOnly: true }], hostGateway: true }) : undefined

describeWithDocker('tool bridge with the real CLI in a Daytona sandbox (routedToolBridge)', reason, () => {
  const provider = daytonaSandbox({ apiKey: 'test', apiUrl: standin?.apiUrl ?? 'http://127.0.0.1:9', killGraceMs: 500 })
  const started: { models: FakeModel[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], sandboxes: [] }
  const allHomes: string[] = []
  let host = ''
  let bridge: ReturnType<typeof routedToolBridge>
  const appRequests: string[] = []
  // The app's own server: it serves the bridge under MOUNT and nothing else of interest.
  const app = createServer(
    getRequestListener((request) => {
      const path = new URL(request.url).pathname
      appRequests.push(path)
      return path.startsWith(`${MOUNT}/`) ? bridge.fetch(request) : new Response('not found', { status: 404 })
    }),
  )

  beforeAll(async () => {
    host = (await bridgeHostAddress())!
    await new Promise<void>((resolve) => app.listen(0, host, resolve))
    bridge = routedToolBridge({ publicUrl: `http://host.docker.internal:${(app.address() as AddressInfo).port}${MOUNT}` })
  })

  afterEach(async () => {
    for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    for (const model of started.models.splice(0)) await model.stop()
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => app.close(() => resolve()))
    await standin?.close()
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'every container was destroyed').toEqual({ containers: [], images: [], volumes: [] })
    expect(allHomes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
  }, 120_000)

  async function setup(): Promise<{ model: FakeModel; options: ClaudeCodeOptions }> {
    const model = await startFakeModel(BRIDGE_FIXTURES as never, { host })
    started.models.push(model)
    const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
    allHomes.push(home)
    const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
    return { model, options: { executable: CLI, env } }
  }

  function sandboxFor(id: string, threadId: string): SandboxDefinition {
    const sandbox = defineSandbox({ id, provider, lifecycle: { snapshot: 'none' } })
    started.sandboxes.push({ sandbox, threadId })
    return sandbox
  }

  const user = (content: string): ModelMessage => ({ role: 'user', content })

  function lookupTool() {
    const calls: string[] = []
    const lookup = toolDefinition({ name: 'lookup_order', description: 'Look up an order by id.', inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] } }).server(async (args) => {
      calls.push((args as { orderId: string }).orderId)
      return { orderId: (args as { orderId: string }).orderId, status: 'shipped', host: process.pid }
    })
    return { calls, tools: [lookup] }
  }

  it('runs a bridged tool on the host for the CLI in the Daytona sandbox, through the routed URL', async () => {
    const { model, options } = await setup()
    const { calls, tools } = lookupTool()
    const seen: ProvisionedToolBridge[] = []
    const withBridge = defineChatMiddleware({
      name: 'routed-tool-bridge',
      provides: [ToolBridgeProvisionerCapability],
      setup: (ctx) =>
        provideToolBridgeProvisioner(ctx, {
          provision: async (input) => {
            const provisioned = await bridge.provisioner.provision(input)
            seen.push(provisioned)
            return provisioned
          },
        }),
    })
    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox: sandboxFor('bridge-daytona', 't-routed'), threadId: 't-routed', messages: [user('Where is order A-17?')], tools, middleware: [withBridge] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Order A-17 has shipped.')
    expect(calls, 'execute ran in this (host) process').toEqual(['A-17'])
    expect(toolResultsOf(model.requests()[1]!)).toEqual([{ toolCallId: 'toolu_bridge_lookup', content: JSON.stringify({ orderId: 'A-17', status: 'shipped', host: process.pid }) }])
    const [provisioned] = seen
    expect(provisioned!.url.startsWith(`http://host.docker.internal:${(app.address() as AddressInfo).port}${MOUNT}/`)).toBe(true)
    expect(appRequests.some((path) => path === new URL(provisioned!.url).pathname), 'the CLI called the routed URL').toBe(true)
    expect(bridge.size, 'the route is gone once the run ended').toBe(0)
    const after = await postToolCall(`http://${host}:${(app.address() as AddressInfo).port}${new URL(provisioned!.url).pathname}`, `Bearer ${provisioned!.token}`, 'lookup_order', { orderId: 'A-17' })
    expect(after.status, 'nothing is served at the route after the run').toBe(404)
    expect(calls).toEqual(['A-17'])
  })

  it('without a routed bridge the run ends with an error that names routedToolBridge', async () => {
    const { options } = await setup()
    const { calls, tools } = lookupTool()
    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox: sandboxFor('bridge-daytona-default', 't-default'), threadId: 't-default', messages: [user('Where is order A-17?')], tools })
    expect(out.error?.message).toContain('runs elsewhere, such as a cloud sandbox')
    expect(out.error?.message).toContain('routedToolBridge')
    expect(calls).toEqual([])
  })
})
