/**
 * Benchmark (e): the tool bridge's round trip for a no-op tool, i.e. one MCP
 * `tools/call` from request to result. Three variants so the cost of each
 * layer shows: the host bridge over loopback HTTP with the token check (what
 * the agent pays per call on local-process), the same through a fresh
 * connection per call, and `handleBridgeJsonRpc` called in-process (the
 * dispatcher alone, as an edge fetch handler runs it). Owns the bridge it starts.
 * Invariant: every timed call must return the tool's value, or the bench fails.
 */
import { createToolBridgeCore, handleBridgeJsonRpc, startHostToolBridge } from '@tanstack/ai-sandbox'
import { Agent, request } from 'node:http'
import { Bench } from 'tinybench'
import { BenchError, median, percentile } from './stats.js'

/** One row of the bridge round-trip result. */
export interface ToolBridgeRoundTripRow {
  readonly name: string
  readonly iterations: number
  /** Milliseconds. */
  readonly medianMs: number
  /** Milliseconds. */
  readonly p95Ms: number
}

const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'noop', arguments: {} } })

/**
 * Time `iterations` calls of a no-op tool per variant (after 20 warm-up calls).
 * @param iterations - Samples per variant. Default 500.
 * @throws BenchError `bench-failed` when a call does not return the tool's value.
 */
export async function benchToolBridgeRoundTrip(iterations = 500): Promise<ToolBridgeRoundTripRow[]> {
  let calls = 0
  const core = createToolBridgeCore({ tools: [{ name: 'noop', description: 'Does nothing.', execute: () => 'ok' }] })
  const bridge = await startHostToolBridge({ core })
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 })
  const fresh = new Agent({ keepAlive: false })
  try {
    const bench = new Bench({ iterations, time: 0, warmupIterations: 20, warmupTime: 0, throws: true })
    bench.add('host bridge over HTTP, kept-alive connection', async () => check(await post(bridge.url, bridge.token, keepAlive), ++calls))
    bench.add('host bridge over HTTP, new connection per call', async () => check(await post(bridge.url, bridge.token, fresh), ++calls))
    bench.add('handleBridgeJsonRpc in-process (no network)', async () => {
      const response = await handleBridgeJsonRpc(core, new Request('http://bridge/mcp', { method: 'POST', headers: HEADERS, body: BODY }))
      check(await response.text(), ++calls)
    })
    await bench.run()
    return bench.tasks.map((task) => {
      const samples = task.result?.latency.samples ?? []
      return { name: task.name, iterations: samples.length, medianMs: median(samples), p95Ms: percentile(samples, 95) }
    })
  } finally {
    keepAlive.destroy()
    fresh.destroy()
    await bridge.close()
  }
}

/** One JSON-RPC POST through node:http (fetch would hide the connection choice). */
function post(url: string, token: string, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...HEADERS, authorization: `Bearer ${token}` } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (part: string) => (text += part))
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new BenchError(`tools/call answered HTTP ${res.statusCode}: ${text}`))))
    })
    req.on('error', reject)
    req.end(BODY)
  })
}

function check(text: string, call: number): void {
  const parsed = JSON.parse(text) as { result?: { content?: { text?: string }[]; isError?: boolean } }
  if (parsed.result?.content?.[0]?.text !== 'ok' || parsed.result.isError) throw new BenchError(`call ${call}: the no-op tool did not return "ok": ${text.slice(0, 200)}`)
}
