/**
 * routedToolBridge over real HTTP: its fetch handler mounted under a path of
 * a node:http server (as an app mounts it on a server its sandboxes reach),
 * spoken to by the MCP SDK's own client at the URL provision() returned:
 * tools listed and called, 401 for a wrong token, 404 for another route and
 * once the run closed, and bad options refused naming the field.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createToolBridgeCore, routedToolBridge, SandboxConfigError, type SandboxHandle } from '../../src/index.js'
import { callBody, connectClient, MCP_POST_HEADERS, textOf } from './mcp-client.js'

describe('routedToolBridge', () => {
  let origin = ''
  let bridge: ReturnType<typeof routedToolBridge>
  const server = createServer(getRequestListener((request) => (new URL(request.url).pathname.startsWith('/apps/bridge/') ? bridge.fetch(request) : new Response('not here', { status: 418 }))))
  const ran: number[] = []
  const core = createToolBridgeCore({
    tools: [{ name: 'double', description: 'Double a number.', inputSchema: z.object({ n: z.number() }), execute: ({ n }: { n: number }) => (ran.push(n), n * 2) }],
  })
  const handle = {} as SandboxHandle

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    bridge = routedToolBridge({ publicUrl: `${origin}/apps/bridge/` })
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('serves each run under its own route and token until the run closes', async () => {
    const first = await bridge.provisioner.provision({ runId: 'r1', handle, core })
    const second = await bridge.provisioner.provision({ runId: 'r2', handle, core })
    expect(first.url.startsWith(`${origin}/apps/bridge/`)).toBe(true)
    expect(first.url).not.toBe(second.url)
    expect(bridge.size).toBe(2)

    const client = await connectClient(first.url, { token: first.token })
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['double'])
    expect(textOf(await client.callTool({ name: 'double', arguments: { n: 21 } }))).toBe('42')
    await client.close()
    expect(ran).toEqual([21])

    const post = (url: string, token: string) => fetch(url, { method: 'POST', headers: { ...MCP_POST_HEADERS, authorization: `Bearer ${token}` }, body: callBody('double', { n: 1 }) })
    expect((await post(first.url, second.token)).status, "another run's token is refused").toBe(401)
    expect((await post(`${origin}/apps/bridge/not-a-route`, first.token)).status).toBe(404)

    await first.close()
    expect((await post(first.url, first.token)).status, 'a closed run is no longer served').toBe(404)
    expect((await post(second.url, second.token)).status).toBe(200)
    await second.close()
    expect(bridge.size).toBe(0)
    expect(ran, 'no refused request ran the tool').toEqual([21, 1])
  })

  it('refuses a publicUrl that is not http(s), naming the field', () => {
    expect(() => routedToolBridge({ publicUrl: 'ftp://x/y' })).toThrow(SandboxConfigError)
    expect(() => routedToolBridge({ publicUrl: 'not a url' })).toThrow(/routedToolBridge\.publicUrl/)
  })
})
