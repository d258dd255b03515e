/**
 * chat() tools bridged into the real `claude` CLI on the local-process
 * provider, against aimock: the model calls `mcp__tanstack__<tool>`, the CLI
 * calls the run's bridge, the tool's `execute` runs here on the host (its
 * closure changes a host variable), and its result reaches the model in the
 * CLI's next request. A tool that throws is a tool error, not a crashed run;
 * a wrong or missing token gets 401 and runs nothing; the bridge is closed
 * when the run ends; the token is in no argv, file or chunk.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { toolDefinition, type ModelMessage } from '@tanstack/ai'
import { CLAUDE_CODE_INIT_EVENT, claudeCodeText, type ClaudeCodeOptions } from '@tanstack/ai-claude-code'
import { defineSandbox, defineSandboxPolicy, TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT, type SandboxDefinition } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, makeClaudeHome, startFakeModel, type ClaudeHome, type FakeModel } from '../src/aimock.js'
import { BRIDGE_FIXTURES, postToolCall, provisionerSpy, runWithTools, toolResultsOf } from './helpers/bridge.js'
import { ofType, processesWithHome, recording } from './helpers/run-claude.js'

const root = mkdtempSync(join(tmpdir(), 'claude-bridge-e2e-'))
const started: { models: FakeModel[]; homes: ClaudeHome[]; sandboxes: { sandbox: SandboxDefinition; threadId: string }[] } = { models: [], homes: [], sandboxes: [] }
const allHomes: string[] = []

afterEach(async () => {
  for (const { sandbox, threadId } of started.sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
  for (const model of started.models.splice(0)) await model.stop()
  for (const home of started.homes.splice(0)) home.cleanup()
})

afterAll(() => {
  const leftDirs = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(leftDirs, 'every sandbox directory is removed').toEqual([])
  expect(allHomes.filter((dir) => existsSync(dir))).toEqual([])
  expect(allHomes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
})

async function setup(): Promise<{ model: FakeModel; home: ClaudeHome; options: ClaudeCodeOptions }> {
  const model = await startFakeModel(BRIDGE_FIXTURES as never)
  started.models.push(model)
  const home = makeClaudeHome('claude-bridge-home')
  started.homes.push(home)
  allHomes.push(home.dir)
  return { model, home, options: { executable: claudeBinary(), env: home.env(model.url) } }
}

const user = (content: string): ModelMessage => ({ role: 'user', content })

/** The host's tools (JSON Schema inputs, as chat() hands them to adapters); `calls` is written only by their execute. */
function orderTools(onCall?: () => Promise<void>) {
  const calls: { tool: string; args: unknown }[] = []
  const lookup = toolDefinition({
    name: 'lookup_order',
    description: 'Look up an order by id and return its status.',
    inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
  }).server(async (args) => {
    const { orderId } = args as { orderId: string }
    calls.push({ tool: 'lookup_order', args: { orderId } })
    await onCall?.()
    return { orderId, status: 'shipped', carrier: 'Pelican Post' }
  })
  const charge = toolDefinition({
    name: 'charge_card',
    description: 'Charge the customer card.',
    inputSchema: { type: 'object', properties: { cents: { type: 'integer' } }, required: ['cents'] },
  }).server(async (args) => {
    const { cents } = args as { cents: number }
    calls.push({ tool: 'charge_card', args: { cents } })
    throw new Error(`card declined for ${cents} cents`)
  })
  return { calls, tools: [lookup, charge] }
}

describe('tool bridge with the real CLI on local-process', () => {
  it('runs a bridged tool on the host and returns its result to the CLI', async () => {
    const { model, options } = await setup()
    const spied = recording(localProcessSandbox({ root }), true)
    const sandbox = defineSandbox({ id: 'bridge-lookup', provider: spied.provider })
    started.sandboxes.push({ sandbox, threadId: 't-lookup' })
    const spy = provisionerSpy()
    const { calls, tools } = orderTools()

    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-lookup', messages: [user('Where is order A-17?')], tools, middleware: [spy.middleware] })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('Order A-17 has shipped.')
    expect(calls, 'execute ran once, on the host, with the model arguments').toEqual([{ tool: 'lookup_order', args: { orderId: 'A-17' } }])

    // The CLI sent the tool's value back: the next model request carries it.
    const requests = model.requests()
    expect(requests).toHaveLength(2)
    expect(toolResultsOf(requests[1]!)).toEqual([{ toolCallId: 'toolu_bridge_lookup', content: '{"orderId":"A-17","status":"shipped","carrier":"Pelican Post"}' }])

    // The CLI saw the bridge as the MCP server `tanstack`, connected.
    const init = ofType(out.chunks, 'CUSTOM').find((c) => c.name === CLAUDE_CODE_INIT_EVENT)!
    expect(init.value.mcpServers).toContainEqual({ name: 'tanstack', status: 'connected' })
    expect(init.value.tools).toEqual(expect.arrayContaining(['mcp__tanstack__lookup_order', 'mcp__tanstack__charge_card']))

    // Stream: the CLI's tool call, the live bridge events with the same id, then the CLI's tool result.
    const order = out.chunks
      .filter((c) => ['TOOL_CALL_START', 'TOOL_CALL_RESULT'].includes(c.type) || (c.type === 'CUSTOM' && String((c as { name: string }).name).startsWith('tool-bridge.')))
      .map((c) => (c.type === 'CUSTOM' ? `${(c as { name: string }).name}:${(c as { value: { toolCallId: string } }).value.toolCallId}` : `${c.type}:${(c as { toolCallId: string }).toolCallId}`))
    expect(order).toEqual(['TOOL_CALL_START:toolu_bridge_lookup', `${TOOL_BRIDGE_CALL_EVENT}:toolu_bridge_lookup`, `${TOOL_BRIDGE_RESULT_EVENT}:toolu_bridge_lookup`, 'TOOL_CALL_RESULT:toolu_bridge_lookup'])
    // The app's own tool name, not the CLI's mcp__tanstack__lookup_order (which stays in metadata.cliToolName).
    expect(ofType(out.chunks, 'TOOL_CALL_START')[0]).toMatchObject({ toolCallName: 'lookup_order', metadata: { providerExecuted: true, cliToolName: 'mcp__tanstack__lookup_order' } })
    expect(ofType(out.chunks, 'CUSTOM').find((c) => c.name === TOOL_BRIDGE_RESULT_EVENT)!.value).toEqual({ toolCallId: 'toolu_bridge_lookup', toolName: 'lookup_order', isError: false, content: '{"orderId":"A-17","status":"shipped","carrier":"Pelican Post"}' })

    // One bridge for the run, on loopback, closed when the run ended; its token went nowhere visible.
    expect(spy.bridges).toHaveLength(1)
    const [bridge] = spy.bridges
    expect(bridge!.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    expect(bridge!.closed).toBe(true)
    await expect(postToolCall(bridge!.hostUrl, `Bearer ${bridge!.token}`, 'lookup_order', { orderId: 'A-17' }), 'nothing listens after the run').rejects.toThrow()
    expect(spied.spawned.join('\n')).toContain('mcp__tanstack__lookup_order')
    expect(spied.spawned.join('\n'), 'the token is not on the command line').not.toContain(bridge!.token)
    expect(JSON.stringify(out.chunks)).not.toContain(bridge!.token)
    const record = await sandbox.fallbackInstances.get(sandbox.key({ threadId: 't-lookup', runId: '' }))
    const workspace = join(root, record!.providerSandboxId, 'workspace')
    for (const file of readdirSync(workspace, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())) {
      expect(readFileSync(join(file.parentPath, file.name), 'utf8'), `${file.name} holds no token`).not.toContain(bridge!.token)
    }
  })

  it('returns a tool that throws on the host to the CLI as a tool error, and the run finishes', async () => {
    const { model, options } = await setup()
    const sandbox = defineSandbox({ id: 'bridge-throw', provider: localProcessSandbox({ root }) })
    started.sandboxes.push({ sandbox, threadId: 't-throw' })
    const { calls, tools } = orderTools()

    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-throw', messages: [user('Charge the card')], tools })

    expect(out.error).toBeUndefined()
    expect(out.text).toBe('The charge failed.')
    expect(calls).toEqual([{ tool: 'charge_card', args: { cents: 1999 } }])
    const [, second] = model.requests()
    expect(toolResultsOf(second!)).toEqual([{ toolCallId: 'toolu_bridge_charge', content: expect.stringContaining('card declined for 1999 cents') }])
    expect(ofType(out.chunks, 'TOOL_CALL_RESULT')[0]!.content).toContain('card declined for 1999 cents')
    expect(ofType(out.chunks, 'CUSTOM').find((c) => c.name === TOOL_BRIDGE_RESULT_EVENT)!.value).toMatchObject({ toolCallId: 'toolu_bridge_charge', isError: true, content: 'card declined for 1999 cents' })
    expect(ofType(out.chunks, 'RUN_FINISHED')).toHaveLength(1)
  })

  it('refuses a wrong or missing token with 401 while the run is live, and nothing runs', async () => {
    const { options } = await setup()
    const sandbox = defineSandbox({ id: 'bridge-token', provider: localProcessSandbox({ root }) })
    started.sandboxes.push({ sandbox, threadId: 't-token' })
    const spy = provisionerSpy()
    const probes: { status: number; ranBefore: number; ranAfter: number }[] = []
    // The probe runs inside the first tool call, while the bridge is serving the CLI.
    const { calls, tools } = orderTools(async () => {
      const bridge = spy.bridges[0]!
      for (const authorization of [undefined, 'Bearer wrong-token', `Bearer ${bridge.token}x`, bridge.token]) {
        const ranBefore = calls.length
        const response = await postToolCall(bridge.hostUrl, authorization, 'charge_card', { cents: 1 })
        probes.push({ status: response.status, ranBefore, ranAfter: calls.length })
      }
    })

    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-token', messages: [user('Where is order A-17?')], tools, middleware: [spy.middleware] })

    expect(out.error).toBeUndefined()
    expect(probes.map((p) => p.status)).toEqual([401, 401, 401, 401])
    expect(probes.every((p) => p.ranAfter === p.ranBefore)).toBe(true)
    expect(calls.map((c) => c.tool), 'only the CLI call ran, never charge_card').toEqual(['lookup_order'])
  })

  it('allows bridged tools under a deny-by-default policy', async () => {
    const { model, options } = await setup()
    const sandbox = defineSandbox({ id: 'bridge-deny', provider: localProcessSandbox({ root }), policy: defineSandboxPolicy({ default: 'deny' }) })
    started.sandboxes.push({ sandbox, threadId: 't-deny' })
    const { calls, tools } = orderTools()
    const out = await runWithTools({ adapter: claudeCodeText('sonnet', options), sandbox, threadId: 't-deny', messages: [user('Where is order A-17?')], tools })
    expect(out.error).toBeUndefined()
    expect(ofType(out.chunks, 'CUSTOM').find((c) => c.name === CLAUDE_CODE_INIT_EVENT)!.value.permissionMode).toBe('dontAsk')
    expect(calls).toHaveLength(1)
    expect(toolResultsOf(model.requests()[1]!)[0]!.content).toContain('shipped')
  })
})
