/**
 * The co-located seam end to end, with the MCP side served by the
 * transport-free dispatcher as an edge `fetch` handler would: descriptors
 * travel as JSON to the "sandbox", where stubs feed a core; each call crosses
 * back over HTTP as one ToolExecRequest to a host route running
 * `executeHostTool`. Only execution crosses: no code, no closure, no MCP.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createToolBridgeCore,
  executeHostTool,
  handleBridgeJsonRpc,
  httpRemoteToolExecutor,
  remoteToolStubs,
  toolDescriptors,
  ToolBridgeError,
  type BridgeableTool,
  type ToolBridgeEvent,
  type ToolDescriptor,
  type ToolExecRequest,
} from '../../src/index.js'
import { connectClient, textOf } from './mcp-client.js'

const TOKEN = 'host-route-token'
const servers: Server[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve))
})

/** The orchestrator's tools: state lives in this closure, on the host. */
function inventory() {
  const stock = new Map([['bolts', 12]])
  const seen: ToolExecRequest[] = []
  const tools: BridgeableTool[] = [
    {
      name: 'take',
      description: 'Take items from stock.',
      inputSchema: z.object({ item: z.string(), count: z.number().int().positive() }),
      execute: ({ item, count }: { item: string; count: number }) => {
        const left = (stock.get(item) ?? 0) - count
        if (left < 0) throw new Error(`only ${stock.get(item) ?? 0} ${item} left`)
        stock.set(item, left)
        return { item, left }
      },
    },
  ]
  return { tools, stock, seen }
}

/** A host route: bearer check, then executeHostTool on the parsed body. */
async function hostRoute(tools: BridgeableTool[], seen: ToolExecRequest[], events: ToolBridgeEvent[]): Promise<string> {
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const part of req) body += String(part)
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401).end()
      return
    }
    const request = JSON.parse(body) as ToolExecRequest
    seen.push(request)
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await executeHostTool(tools, request, { onEvent: (e) => events.push(e) })))
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/tools`
}

/** The sandbox side: a core over stubs, served by the dispatcher through the client's fetch. */
async function sandboxSide(descriptorsJson: string, url: string, token = TOKEN) {
  const descriptors = JSON.parse(descriptorsJson) as ToolDescriptor[]
  const core = createToolBridgeCore({ tools: remoteToolStubs(descriptors, httpRemoteToolExecutor({ url, token })), toolCallIdFrom: (meta) => meta.id as string })
  return connectClient('http://sandbox.invalid/mcp', { fetch: (input, init) => handleBridgeJsonRpc(core, new Request(input, init)) })
}

describe('co-located seam: toolDescriptors + remoteToolStubs + httpRemoteToolExecutor + executeHostTool', () => {
  it('runs the host execute for a call made inside the sandbox', async () => {
    const { tools, stock, seen } = inventory()
    const events: ToolBridgeEvent[] = []
    const url = await hostRoute(tools, seen, events)
    const descriptorsJson = JSON.stringify(toolDescriptors(tools))
    expect(JSON.parse(descriptorsJson)).toEqual([
      { name: 'take', description: 'Take items from stock.', inputSchema: expect.objectContaining({ type: 'object', required: ['item', 'count'] }) },
    ])

    const client = await sandboxSide(descriptorsJson, url)
    const { tools: listed } = await client.listTools()
    expect(listed.map((t) => t.name)).toEqual(['take'])
    const result = await client.callTool({ name: 'take', arguments: { item: 'bolts', count: 5 }, _meta: { id: 'toolu_7' } })
    expect(textOf(result)).toBe('{"item":"bolts","left":7}')
    expect(stock.get('bolts'), 'the host closure changed').toBe(7)
    expect(seen, 'exactly one execution request crossed').toEqual([{ toolName: 'take', args: { item: 'bolts', count: 5 }, toolCallId: 'toolu_7' }])
    expect(events.map((e) => [e.type, e.toolCallId])).toEqual([
      ['call', 'toolu_7'],
      ['result', 'toolu_7'],
    ])
    await client.close()
  })

  it('returns a host tool that throws to the agent as a tool error', async () => {
    const { tools, stock, seen } = inventory()
    const client = await sandboxSide(JSON.stringify(toolDescriptors(tools)), await hostRoute(tools, seen, []))
    const result = await client.callTool({ name: 'take', arguments: { item: 'bolts', count: 50 } })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toBe('only 12 bolts left')
    expect(stock.get('bolts')).toBe(12)
    await client.close()
  })

  it('validates inside the sandbox first: bad arguments never cross', async () => {
    const { tools, seen } = inventory()
    const client = await sandboxSide(JSON.stringify(toolDescriptors(tools)), await hostRoute(tools, seen, []))
    const error = await client.callTool({ name: 'take', arguments: { item: 'bolts', count: -1 } }).catch((e: unknown) => e)
    expect((error as McpError).code).toBe(-32602)
    expect(seen).toEqual([])
    await client.close()
  })

  it('turns a refused host request (wrong token) into a tool error naming the status', async () => {
    const { tools, stock, seen } = inventory()
    const client = await sandboxSide(JSON.stringify(toolDescriptors(tools)), await hostRoute(tools, seen, []), 'wrong')
    const result = await client.callTool({ name: 'take', arguments: { item: 'bolts', count: 1 } })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain('HTTP 401')
    expect(stock.get('bolts')).toBe(12)
    await client.close()
  })

  it('executeHostTool answers unknown tools and bad arguments without running anything', async () => {
    const { tools, stock } = inventory()
    expect(await executeHostTool(tools, { toolName: 'sell', args: {} })).toEqual({ ok: false, error: { reason: 'unknown-tool', message: 'Unknown tool "sell". This bridge exposes: take.' } })
    const bad = await executeHostTool(tools, { toolName: 'take', args: { item: 'bolts' } })
    expect(bad).toMatchObject({ ok: false, error: { reason: 'invalid-arguments' } })
    expect(await executeHostTool(tools, { toolName: 'take', args: { item: 'bolts', count: 2 } })).toEqual({ ok: true, result: { item: 'bolts', left: 10 } })
    expect(stock.get('bolts')).toBe(10)
  })

  it('httpRemoteToolExecutor rejects with the host reason', async () => {
    const executor = httpRemoteToolExecutor({ url: 'http://host.invalid/tools', token: TOKEN, fetch: async () => Response.json({ ok: false, error: { reason: 'unknown-tool', message: 'Unknown tool "x".' } }) })
    const error = await executor({ toolName: 'x', args: {} }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ToolBridgeError)
    expect((error as ToolBridgeError).reason).toBe('unknown-tool')
    const unreachable = httpRemoteToolExecutor({ url: 'http://127.0.0.1:1/tools', token: TOKEN })
    expect(((await unreachable({ toolName: 'x', args: {} }).catch((e: unknown) => e)) as ToolBridgeError).reason).toBe('remote-failed')
  })
})
