/**
 * The tools route of a colocated run (`serveToolCall`), in Node: the run's
 * own bearer or 401, a run that ended takes no more calls (409), a body that
 * is not a ToolExecRequest is a 400, and a call runs the chat() tool with
 * `executeHostTool`'s answers. The route inside workerd, reached from the
 * runner in a container, is in
 * testing/claude-code-e2e/tests/cloudflare-agent.colocated.e2e.test.ts.
 */
import { toolDefinition } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { serveToolCall } from '../src/agent/tools-route.js'

const token = 'b'.repeat(64)
const lookup = toolDefinition({
  name: 'lookup_order',
  description: 'Look up an order by id.',
  inputSchema: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
}).server(async (args) => ({ orderId: (args as { orderId: string }).orderId, status: 'shipped' }))

const call = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${token}` }, method = 'POST') =>
  new Request('https://w/runs/run-1/tools', { method, headers, ...(method === 'POST' ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) })

describe('the colocated tools route', () => {
  it("takes the run's own bearer only, and no call once the run ended", async () => {
    const body = { toolName: 'lookup_order', args: { orderId: 'A-1' } }
    expect((await serveToolCall(call(body, {}), [lookup], token, false)).status).toBe(401)
    expect((await serveToolCall(call(body, { authorization: 'Bearer wrong' }), [lookup], token, false)).status).toBe(401)
    expect((await serveToolCall(call(body), [lookup], undefined, false)).status).toBe(401)
    expect((await serveToolCall(call(body, undefined, 'GET'), [lookup], token, false)).status).toBe(405)
    const ended = await serveToolCall(call(body), [lookup], token, true)
    expect(ended.status).toBe(409)
    expect(await ended.json()).toEqual({ error: expect.stringMatching(/run has ended/) })
  })

  it('runs the tool, and answers a bad body or an unknown tool clearly', async () => {
    const ok = await serveToolCall(call({ toolName: 'lookup_order', args: { orderId: 'A-1' }, toolCallId: 'tc1' }), [lookup], token, false)
    expect(await ok.json()).toEqual({ ok: true, result: { orderId: 'A-1', status: 'shipped' } })
    expect((await serveToolCall(call('not json'), [lookup], token, false)).status).toBe(400)
    const unknown = await serveToolCall(call({ toolName: 'nope', args: {} }), [lookup], token, false)
    expect(await unknown.json()).toMatchObject({ ok: false, error: { reason: 'unknown-tool' } })
    const invalid = await serveToolCall(call({ toolName: 'lookup_order', args: {} }), [lookup], token, false)
    expect(await invalid.json()).toMatchObject({ ok: false, error: { reason: 'invalid-arguments' } })
  })
})
