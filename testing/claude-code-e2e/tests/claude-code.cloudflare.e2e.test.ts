/**
 * The real `claude` CLI in a Cloudflare sandbox, driven as an app deploys it:
 * chat() with `claudeCodeText` and `withSandbox(cloudflareSandbox(...))` runs
 * in a Durable Object of the Worker in workerd (Miniflare; the real
 * `@cloudflare/sandbox` Durable Object; a container of the stand-in image
 * with the CLI's binary mounted where the app's image would have it), and
 * the chat() tool is bridged from that object's own `fetch`
 * (`routedToolBridge`, no listener; the Worker routes `/agent/<name>/…` to
 * it). One turn: the fake model makes the CLI call the tool, the tool runs in
 * the object, the answer comes back; the prompt went through a file (no
 * writable stdin); afterwards no container and no CLI process is left.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { CLAUDE_CODE_INIT_EVENT } from '@tanstack/ai-claude-code'
import { TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT } from '@tanstack/ai-sandbox'
import { bundleWorker, cloudflareMissing, startCloudflareLab, type CloudflareLab } from '@testing/cloudflare-standin'
import { bridgeHostAddress, describeWithDocker } from '@testing/support/docker-engine'
import { claudeBinary, startFakeModel, userTexts, type FakeModel } from '../src/aimock.js'
import { BRIDGE_FIXTURES, postToolCall, toolResultsOf } from './helpers/bridge.js'
import type { TurnReport, TurnRequest } from './helpers/cloudflare-chat-worker.js'
import { ofType, processesWithHome, waitFor } from './helpers/run-claude.js'

/** Where the CLI binary appears inside every container of the lab. */
const CLI = '/opt/claude/claude'
const reason = (await cloudflareMissing()) ?? null
const dir = mkdtempSync(join(tmpdir(), 'cc-cloudflare-'))
let lab: CloudflareLab | undefined
if (reason === null) {
  const script = await bundleWorker(fileURLToPath(new URL('./helpers/cloudflare-chat-worker.ts', import.meta.url)), join(dir, 'worker.js'))
  lab = await startCloudflareLab({ script, bindings: { SANDBOX_LOG_LEVEL: 'error' }, mounts: [{ source: claudeBinary(), target: CLI, readOnly: true }], hostGateway: true, durableObjects: { ChatAgent: 'ChatAgent' } })
}

/** POST /agent/<agent>/turn to the Worker; the chunks it streamed and its report. */
async function turn(agent: string, input: TurnRequest): Promise<{ chunks: StreamChunk[]; text: string; report: TurnReport }> {
  const response = await fetch(new URL(`/agent/${agent}/turn`, lab!.url), { method: 'POST', body: JSON.stringify(input) })
  expect(response.status).toBe(200)
  const lines = (await response.text()).split('\n').filter((line) => line !== '')
  const parsed = lines.map((line) => JSON.parse(line) as { chunk?: StreamChunk; report?: TurnReport })
  const chunks = parsed.flatMap((line) => (line.chunk ? [line.chunk] : []))
  const report = parsed.at(-1)?.report
  if (!report) throw new Error(`the Worker's stream ended without a report: ${lines.at(-1)}`)
  const text = ofType(chunks, 'TEXT_MESSAGE_CONTENT').map((c) => c.delta as string).join('')
  return { chunks, text, report }
}

describeWithDocker('claude-code adapter with the real CLI in a Cloudflare sandbox, chat() in a Durable Object (stand-in)', reason, () => {
  const homes: string[] = []
  const models: FakeModel[] = []

  afterAll(async () => {
    for (const model of models) await model.stop()
    await lab?.close()
    rmSync(dir, { recursive: true, force: true })
    expect(homes.flatMap(processesWithHome), 'no CLI process is left').toEqual([])
  }, 180_000)

  it("runs one turn in a Durable Object of the Worker with a chat() tool bridged from that object's own fetch", async () => {
    const host = (await bridgeHostAddress())!
    const model = await startFakeModel(BRIDGE_FIXTURES as never, { host })
    models.push(model)
    const home = `/tmp/claude-home-${randomUUID().slice(0, 8)}`
    homes.push(home)
    const env = { HOME: home, CLAUDE_CONFIG_DIR: `${home}/.claude`, ANTHROPIC_BASE_URL: `http://host.docker.internal:${model.port}`, ANTHROPIC_API_KEY: 'test-key-not-a-secret', CLAUDE_CODE_MAX_RETRIES: '0' }
    const agent = `agent-${randomUUID().slice(0, 8)}`
    const { chunks, text, report } = await turn(agent, { threadId: 't-cf-bridge', messages: [{ role: 'user', content: 'Where is order A-17?' }], options: { executable: CLI, env }, workerUrl: lab!.containerUrl!.href })

    expect(report.thrown).toBeUndefined()
    expect(ofType(chunks, 'RUN_ERROR')).toEqual([])
    expect(text).toBe('Order A-17 has shipped.')
    expect(chunks[0]?.type).toBe('RUN_STARTED')
    expect(chunks.at(-1)?.type).toBe('RUN_FINISHED')

    // The tool ran in the agent's Durable Object (workerd), with the model's arguments, and its value reached the model.
    expect(report.toolCalls).toEqual([{ orderId: 'A-17' }])
    const requests = model.requests()
    expect(requests).toHaveLength(2)
    expect(userTexts(requests[0]!)).toEqual(['Where is order A-17?'])
    expect(toolResultsOf(requests[1]!)).toEqual([{ toolCallId: 'toolu_bridge_lookup', content: JSON.stringify({ orderId: 'A-17', status: 'shipped', runtime: 'Cloudflare-Workers' }) }])

    // The CLI saw the bridge as the MCP server `tanstack`; the stream carries the call, the live bridge events and the result.
    const init = ofType(chunks, 'CUSTOM').find((c) => c.name === CLAUDE_CODE_INIT_EVENT)!
    expect(init.value.mcpServers).toContainEqual({ name: 'tanstack', status: 'connected' })
    const order = chunks
      .filter((c) => ['TOOL_CALL_START', 'TOOL_CALL_RESULT'].includes(c.type) || (c.type === 'CUSTOM' && String((c as { name: string }).name).startsWith('tool-bridge.')))
      .map((c) => (c.type === 'CUSTOM' ? `${(c as { name: string }).name}:${(c as { value: { toolCallId: string } }).value.toolCallId}` : `${c.type}:${(c as { toolCallId: string }).toolCallId}`))
    // The bridge events come straight from this isolate while the CLI's own lines come through the container's
    // log stream, so the bridge call may be seen before the CLI's TOOL_CALL_START; only causal order is certain.
    const labels = ['TOOL_CALL_START', TOOL_BRIDGE_CALL_EVENT, TOOL_BRIDGE_RESULT_EVENT, 'TOOL_CALL_RESULT'].map((name) => `${name}:toolu_bridge_lookup`)
    expect([...order].sort()).toEqual([...labels].sort())
    const at = (label: string) => order.indexOf(label)
    const [start, call, result, cliResult] = labels as [string, string, string, string]
    expect(at(call)).toBeLessThan(at(result))
    expect(at(result)).toBeLessThan(at(cliResult))
    expect(at(start)).toBeLessThan(at(cliResult))
    expect(ofType(chunks, 'TOOL_CALL_START')[0]).toMatchObject({ toolCallName: 'lookup_order', metadata: { providerExecuted: true, cliToolName: 'mcp__tanstack__lookup_order' } })

    // The bridge was a route of the agent's own fetch (its name in the path), called by the CLI, gone after the run.
    expect(report.bridge.url.startsWith(new URL(`agent/${agent}/tool-bridge/`, lab!.containerUrl).href)).toBe(true)
    expect(report.bridgeRequests.length).toBeGreaterThan(0)
    expect(new Set(report.bridgeRequests)).toEqual(new Set([new URL(report.bridge.url).pathname]))
    expect(report.bridgeRoutesAfter, 'no route is served once the run ended').toBe(0)
    const after = await postToolCall(new URL(new URL(report.bridge.url).pathname, lab!.url).href, `Bearer ${report.bridge.token}`, 'lookup_order', { orderId: 'A-17' })
    expect(after.status, 'nothing is served at the route after the run').toBe(404)
    expect(report.toolCalls).toHaveLength(1)

    // No writable stdin on Cloudflare: the prompt went through a file, redirected into the one CLI command, and was removed.
    expect(report.sandbox.writableStdin).toBe(false)
    const runId = ofType(chunks, 'RUN_STARTED')[0]!.runId as string
    const cli = report.spawned.filter((command) => command.includes(CLI))
    expect(cli).toHaveLength(1)
    expect(cli[0]).toContain(`< /tmp/tanstack-claude-code/${runId}.prompt`)
    expect(cli[0], 'the prompt is never part of the command line').not.toContain('order A-17')
    expect(report.promptFilesLeft, 'no prompt file is left behind').toBe('')

    // The Worker destroyed the sandbox: its container is gone, and so is every CLI process.
    expect(await waitFor(async () => (await lab!.containers()).length === 0), "the run's container was removed").toBe(true)
    expect(await waitFor(() => processesWithHome(home).length === 0), 'no CLI process is left').toBe(true)
  })
})
