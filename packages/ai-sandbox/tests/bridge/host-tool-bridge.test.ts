/**
 * The tool bridge over real HTTP, spoken to by the MCP SDK's own client:
 * listing, calls that run the host `execute` with its closure, a throwing tool
 * as an `isError` result, JSON-RPC errors for an unknown tool and bad
 * arguments, 401 with nothing run for a missing or wrong token, events, and
 * a close that aborts running tools and stops listening.
 */
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createToolBridgeCore, startHostToolBridge, ToolBridgeError, type BridgeableTool, type HostToolBridge, type ToolBridgeEvent } from '../../src/index.js'
import { callBody, connectClient, MCP_POST_HEADERS, textOf } from './mcp-client.js'

const open: { close: () => Promise<void> }[] = []
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close()
})

/** Host state the tools change: proof that `execute` ran here, with its own closure. */
function hostTools() {
  const ran: { name: string; args: unknown }[] = []
  const tools: BridgeableTool[] = [
    {
      name: 'add',
      description: 'Add two numbers.',
      inputSchema: z.object({ a: z.number(), b: z.number(), label: z.string().default('sum') }),
      execute: (args: { a: number; b: number; label: string }) => {
        ran.push({ name: 'add', args })
        return { [args.label]: args.a + args.b }
      },
    },
    {
      name: 'shout',
      description: 'Upper-case a word.',
      inputSchema: { type: 'object', properties: { word: { type: 'string', minLength: 1 } }, required: ['word'] },
      execute: (args: { word: string }) => {
        ran.push({ name: 'shout', args })
        return args.word.toUpperCase()
      },
    },
    {
      name: 'explode',
      description: 'Always fails.',
      execute: () => {
        ran.push({ name: 'explode', args: {} })
        throw new Error('the warehouse is on fire')
      },
    },
  ]
  return { tools, ran }
}

async function startBridge(tools: BridgeableTool[], onEvent?: (event: ToolBridgeEvent) => void): Promise<HostToolBridge> {
  const bridge = await startHostToolBridge({ core: createToolBridgeCore({ tools, ...(onEvent ? { onEvent } : {}), toolCallIdFrom: (meta) => meta['test/toolUseId'] as string | undefined }) })
  open.push(bridge)
  return bridge
}

describe('startHostToolBridge with the MCP SDK client', () => {
  it('lists the tools with their JSON Schemas', async () => {
    const bridge = await startBridge(hostTools().tools)
    const client = await connectClient(bridge.url, { token: bridge.token })
    open.push(client)
    const { tools } = await client.listTools()
    expect(tools.map((t) => [t.name, t.description])).toEqual([
      ['add', 'Add two numbers.'],
      ['shout', 'Upper-case a word.'],
      ['explode', 'Always fails.'],
    ])
    expect(tools[0]!.inputSchema).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] })
    expect(tools[1]!.inputSchema).toEqual({ type: 'object', properties: { word: { type: 'string', minLength: 1 } }, required: ['word'] })
    expect(tools[2]!.inputSchema).toEqual({ type: 'object', properties: {} })
    expect(bridge.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
  })

  it('runs execute on the host with validated arguments and returns its value', async () => {
    const { tools, ran } = hostTools()
    const events: ToolBridgeEvent[] = []
    const bridge = await startBridge(tools, (event) => events.push(event))
    const client = await connectClient(bridge.url, { token: bridge.token })
    open.push(client)

    const added = await client.callTool({ name: 'add', arguments: { a: 2, b: 40 }, _meta: { 'test/toolUseId': 'toolu_1' } })
    expect(added.isError).toBeFalsy()
    expect(textOf(added)).toBe('{"sum":42}')
    expect(textOf(await client.callTool({ name: 'shout', arguments: { word: 'hey' } }))).toBe('HEY')
    expect(ran, 'the closures ran here, with the schema defaults applied').toEqual([
      { name: 'add', args: { a: 2, b: 40, label: 'sum' } },
      { name: 'shout', args: { word: 'hey' } },
    ])
    expect(events.slice(0, 2)).toEqual([
      { type: 'call', toolCallId: 'toolu_1', toolName: 'add', input: { a: 2, b: 40, label: 'sum' } },
      { type: 'result', toolCallId: 'toolu_1', toolName: 'add', isError: false, content: '{"sum":42}' },
    ])
    expect(events[2]!.toolCallId, 'without an id in _meta the core makes one').toMatch(/^[0-9a-f-]{36}$/)
  })

  it('returns a tool that throws as an isError result, and keeps serving', async () => {
    const { tools, ran } = hostTools()
    const events: ToolBridgeEvent[] = []
    const bridge = await startBridge(tools, (event) => events.push(event))
    const client = await connectClient(bridge.url, { token: bridge.token })
    open.push(client)
    const failed = await client.callTool({ name: 'explode', arguments: {} })
    expect(failed.isError).toBe(true)
    expect(textOf(failed)).toBe('the warehouse is on fire')
    expect(events.at(-1)).toMatchObject({ type: 'result', toolName: 'explode', isError: true, content: 'the warehouse is on fire' })
    expect(textOf(await client.callTool({ name: 'shout', arguments: { word: 'still here' } }))).toBe('STILL HERE')
    expect(ran.map((r) => r.name)).toEqual(['explode', 'shout'])
  })

  it('answers an unknown tool and invalid arguments with a JSON-RPC error, running nothing', async () => {
    const { tools, ran } = hostTools()
    const events: ToolBridgeEvent[] = []
    const bridge = await startBridge(tools, (event) => events.push(event))
    const client = await connectClient(bridge.url, { token: bridge.token })
    open.push(client)

    const unknown = await client.callTool({ name: 'launch_rockets', arguments: {} }).catch((error: unknown) => error)
    expect(unknown).toBeInstanceOf(McpError)
    expect((unknown as McpError).code).toBe(-32602)
    expect((unknown as McpError).message).toContain('Unknown tool "launch_rockets". This bridge exposes: add, shout, explode.')

    const bad = await client.callTool({ name: 'add', arguments: { a: 'two', b: 40 } }).catch((error: unknown) => error)
    expect((bad as McpError).code).toBe(-32602)
    expect((bad as McpError).message).toContain('Invalid arguments for tool "add": a: Invalid input: expected number, received string')

    const empty = await client.callTool({ name: 'shout', arguments: { word: '' } }).catch((error: unknown) => error)
    expect((empty as McpError).message, 'the JSON Schema is enforced too').toContain('Invalid arguments for tool "shout": word:')

    expect(ran).toEqual([])
    expect(events).toEqual([])
  })

  it('answers malformed tools/call params (arguments null or an array, a non-string name) with -32602, running nothing', async () => {
    const { tools, ran } = hostTools()
    const bridge = await startBridge(tools)
    const post = (params: unknown) =>
      fetch(bridge.url, { method: 'POST', headers: { ...MCP_POST_HEADERS, authorization: `Bearer ${bridge.token}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params }) }).then((r) => r.json() as Promise<{ id: number; error?: { code: number; message: string } }>)
    for (const [params, field] of [[{ name: 'shout', arguments: null }, 'arguments'], [{ name: 'shout', arguments: ['x'] }, 'arguments'], [{ name: null, arguments: {} }, 'name']] as const) {
      const reply = await post(params)
      expect(reply.id).toBe(7)
      expect(reply.error?.code, JSON.stringify(params)).toBe(-32602)
      expect(reply.error?.message).toContain('Invalid tools/call request')
      expect(reply.error?.message).toContain(`"${field}"`)
    }
    // No params at all is not a JSON-RPC request the transport accepts.
    expect((await post(null)).error?.code).toBe(-32700)
    expect(ran).toEqual([])
  })

  it('refuses a missing or wrong token with 401, and nothing runs', async () => {
    const { tools, ran } = hostTools()
    const bridge = await startBridge(tools)
    const post = (headers: Record<string, string>) => fetch(bridge.url, { method: 'POST', headers: { ...MCP_POST_HEADERS, ...headers }, body: callBody('shout', { word: 'x' }) })

    const missing = await post({})
    expect(missing.status).toBe(401)
    expect(missing.headers.get('www-authenticate')).toBe('Bearer')
    expect((await post({ authorization: `Bearer ${bridge.token}x` })).status).toBe(401)
    expect((await post({ authorization: `Bearer ${bridge.token.slice(0, -1)}` })).status).toBe(401)
    expect((await post({ authorization: bridge.token })).status, 'the scheme is required').toBe(401)
    expect((await post({ authorization: 'Bearer ' })).status).toBe(401)
    await expect(connectClient(bridge.url, { token: 'not-the-token' }), 'the SDK client cannot even initialize').rejects.toThrow()
    expect(ran, 'no tool ran for any refused request').toEqual([])

    const allowed = await post({ authorization: `Bearer ${bridge.token}` })
    expect(allowed.status).toBe(200)
    expect(await allowed.json()).toMatchObject({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'X' }] } })
    expect(ran).toEqual([{ name: 'shout', args: { word: 'x' } }])
  })

  it('answers GET with 405 and other paths with 404 (after the token check)', async () => {
    const bridge = await startBridge(hostTools().tools)
    const auth = { authorization: `Bearer ${bridge.token}` }
    expect((await fetch(bridge.url, { headers: { ...auth, accept: 'text/event-stream' } })).status).toBe(405)
    expect((await fetch(bridge.url.replace('/mcp', '/other'), { method: 'POST', headers: auth })).status).toBe(404)
    expect((await fetch(bridge.url.replace('/mcp', '/other'), { method: 'POST' })).status).toBe(401)
  })

  it('forwards events a tool emits, with the call id', async () => {
    const events: ToolBridgeEvent[] = []
    const tool: BridgeableTool = {
      name: 'progress',
      description: 'Reports progress.',
      execute: (_args: unknown, context: { emitCustomEvent: (name: string, value: Record<string, unknown>) => void }) => {
        context.emitCustomEvent('progress', { step: 1 })
        return 'done'
      },
    }
    const bridge = await startBridge([tool], (event) => events.push(event))
    const client = await connectClient(bridge.url, { token: bridge.token })
    open.push(client)
    await client.callTool({ name: 'progress', arguments: {}, _meta: { 'test/toolUseId': 'toolu_p' } })
    expect(events.map((e) => e.type)).toEqual(['call', 'custom', 'result'])
    expect(events[1]).toEqual({ type: 'custom', toolCallId: 'toolu_p', toolName: 'progress', name: 'progress', value: { step: 1 } })
  })

  it('close() aborts a running tool and stops listening', async () => {
    let started!: () => void
    const running = new Promise<void>((resolve) => (started = resolve))
    let aborted = false
    const slow: BridgeableTool = {
      name: 'slow',
      description: 'Waits until aborted.',
      execute: (_args: unknown, context: { abortSignal?: AbortSignal }) =>
        new Promise((_resolve, reject) => {
          started()
          context.abortSignal?.addEventListener('abort', () => {
            aborted = true
            reject(new Error('aborted'))
          })
        }),
    }
    const bridge = await startHostToolBridge({ core: createToolBridgeCore({ tools: [slow] }) })
    const call = fetch(bridge.url, { method: 'POST', headers: { ...MCP_POST_HEADERS, authorization: `Bearer ${bridge.token}` }, body: callBody('slow', {}) }).catch((error: unknown) => error)
    await running
    await bridge.close()
    await call
    expect(aborted, 'the tool saw its abort signal').toBe(true)
    await expect(fetch(bridge.url, { method: 'POST' })).rejects.toThrow()
    await bridge.close() // idempotent
  })

  it('refuses tools it cannot bridge when the core is made', () => {
    expect(() => createToolBridgeCore({ tools: [{ name: 'has space', description: '' }] })).toThrow(ToolBridgeError)
    expect(() => createToolBridgeCore({ tools: [{ name: 'list', description: '', inputSchema: { type: 'array' } }] })).toThrow(/must describe an object/)
    expect(() => createToolBridgeCore({ tools: [{ name: 'a', description: '' }, { name: 'a', description: '' }] })).toThrow(/Two tools are named "a"/)
  })

  it('validates its options, naming the field', async () => {
    const core = createToolBridgeCore({ tools: [] })
    await expect(startHostToolBridge({ core, port: 70_000 })).rejects.toThrow(/startHostToolBridge\.port/)
    await expect(startHostToolBridge({ core, token: 'short' })).rejects.toThrow(/startHostToolBridge\.token: use at least 16 characters/)
    await expect(startHostToolBridge({ core: {} as never })).rejects.toThrow(/startHostToolBridge\.core: expected a core from createToolBridgeCore\(\)/)
  })

  it('fails to listen on an address that is not this machine with listen-failed', async () => {
    const error = await startHostToolBridge({ core: createToolBridgeCore({ tools: [] }), host: '192.0.2.1' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ToolBridgeError)
    expect((error as ToolBridgeError).reason).toBe('listen-failed')
  })
})
