/**
 * Workspace provisioning projected for the real `opencode` CLI, in one turn
 * over the local-process provider: instructions arrive through AGENTS.md
 * (which OpenCode reads itself), an agent skill is listed to the model, and
 * an HTTP MCP server declared with `mcpSkill` and a `bearer()` workspace
 * secret is called by the agent. The MCP server is core's host tool bridge
 * with its own token, so a header that did not carry the secret would get
 * 401 and the tool would never be offered. The secret itself never reaches
 * the projected config file (it says `{env:NAME}`).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { toolDefinition } from '@tanstack/ai'
import { OPENCODE_PROJECTED_CONFIG, opencodeText } from '@tanstack/ai-opencode'
import { agentSkill, bearer, createSecrets, createToolBridgeCore, defineSandbox, defineWorkspace, mcpSkill, startHostToolBridge, type BridgeableTool } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { FAKE_MODEL, makeOpencodeHome, opencodeBinary, providerConfig, startFakeModel, systemTextOf, toolNamesOf } from '../src/aimock.js'
import { ofType, processesWithHome, runOpencode } from './helpers/run-opencode.js'

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'opencode-provisioning-e2e-'))
const homes: string[] = []

afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
  expect(homes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
})

it('projects instructions, an agent skill and an MCP server with a bearer secret, and the agent uses them', async () => {
  const calls: unknown[] = []
  const lookup = toolDefinition({ name: 'lookup_order', description: 'Look up an order by id.', inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] } }).server(async (args) => {
    calls.push(args)
    return { orderId: (args as { orderId: string }).orderId, status: 'shipped' }
  })
  const token = `orders-token-${process.pid}-${Date.now()}`
  const mcp = await startHostToolBridge({ core: createToolBridgeCore({ tools: [lookup as BridgeableTool] }), token })
  const model = await startFakeModel(join(fixtures, 'provisioning.json'))
  const home = makeOpencodeHome('opencode-provisioning-home')
  homes.push(home.dir)
  const secrets = createSecrets({ ORDERS_TOKEN: token })
  const sandbox = defineSandbox({
    id: 'oc-provisioning',
    provider: localProcessSandbox({ root }),
    workspace: defineWorkspace({
      secrets,
      instructions: 'Project rule MARKER-AGENTS-9: answer briefly.',
      skills: [agentSkill('release-notes', { description: 'Writing release notes MARKER-SKILL-3', content: 'Group changes by package.' }), mcpSkill('orders', { url: mcp.url, headers: { Authorization: bearer(secrets.ORDERS_TOKEN) } })],
    }),
  })
  const key = sandbox.key({ threadId: 't-prov', runId: '' })
  try {
    const adapter = opencodeText(FAKE_MODEL, { executable: opencodeBinary(), env: home.env(), config: providerConfig(model.url), timeoutMs: 90_000 })
    const out = await runOpencode({ adapter, sandbox, threadId: 't-prov', messages: [{ role: 'user', content: 'Where is order A-17?' }] })

    expect(out.error).toBeUndefined()
    expect(calls, 'the agent called the MCP server with the secret-bearing header').toEqual([{ orderId: 'A-17' }])
    const result = ofType(out.chunks, 'TOOL_CALL_RESULT').find((c) => c.toolCallId === 'call_e2e_orders')
    expect(JSON.parse(result!.content as string)).toEqual({ orderId: 'A-17', status: 'shipped' })
    expect(out.text).toBe('Order A-17 has shipped.')

    const [first] = model.requests()
    expect(toolNamesOf(first!)).toEqual(expect.arrayContaining(['orders_lookup_order', 'skill', 'bash']))
    const system = systemTextOf(first!)
    expect(system, 'AGENTS.md reaches the model').toContain('Project rule MARKER-AGENTS-9')
    expect(system, 'the agent skill is listed').toContain('MARKER-SKILL-3')

    const record = await sandbox.fallbackInstances.get(key)
    const config = readFileSync(join(root, record!.providerSandboxId, 'workspace', OPENCODE_PROJECTED_CONFIG), 'utf8')
    expect(config).toContain('"Authorization": "Bearer {env:ORDERS_TOKEN}"')
    expect(config, 'the secret value is not in the file').not.toContain(token)
  } finally {
    await sandbox.destroy({ key })
    await mcp.close()
    await model.stop()
    home.cleanup()
  }
}, 180_000)
