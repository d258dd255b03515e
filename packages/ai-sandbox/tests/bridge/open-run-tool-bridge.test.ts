/**
 * Provisioning a run's bridge: the default host provisioner listens where
 * `handle.hostAccess()` says and names the host as the sandbox does; a
 * handle that cannot reach the host fails with `unreachable`; an app's
 * provisioner from the capability wins; `close()` ends the chunk stream.
 */
import { describe, expect, it } from 'vitest'
import type { CapabilityContext } from '@tanstack/ai'
import { createToolBridgeCore, hostToolBridgeProvisioner, openRunToolBridge, provideToolBridgeProvisioner, TOOL_BRIDGE_CALL_EVENT, ToolBridgeError, type BridgeableTool, type SandboxHandle, type SandboxHostAccess, type ToolBridgeProvisioner } from '../../src/index.js'
import { createFakeHandle } from '../helpers/fake-handle.js'
import { connectClient, textOf } from './mcp-client.js'

const echo: BridgeableTool = { name: 'echo', description: 'Echo.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, execute: ({ text }: { text: string }) => text }

function handleWith(hostAccess?: () => Promise<SandboxHostAccess | undefined>): SandboxHandle {
  const handle = createFakeHandle()
  return hostAccess ? { ...handle, hostAccess } : handle
}

describe('hostToolBridgeProvisioner', () => {
  it('listens on the listen address and gives the URL under the sandbox host name', async () => {
    const core = createToolBridgeCore({ tools: [echo] })
    const bridge = await hostToolBridgeProvisioner().provision({ runId: 'r1', handle: handleWith(async () => ({ hostname: 'localhost', listenAddress: '127.0.0.1' })), core })
    try {
      expect(bridge.url).toMatch(/^http:\/\/localhost:\d+\/mcp$/)
      const client = await connectClient(bridge.url.replace('localhost', '127.0.0.1'), { token: bridge.token })
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'hi' } }))).toBe('hi')
      await client.close()
    } finally {
      await bridge.close()
    }
  })

  it('fails with unreachable when the handle cannot say, or says the host is unreachable', async () => {
    const core = createToolBridgeCore({ tools: [echo] })
    for (const handle of [handleWith(), handleWith(async () => undefined)]) {
      const error = await hostToolBridgeProvisioner().provision({ runId: 'r1', handle, core }).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ToolBridgeError)
      expect((error as ToolBridgeError).reason).toBe('unreachable')
      expect((error as Error).message).toContain('inject a ToolBridgeProvisioner')
    }
  })
})

describe('openRunToolBridge', () => {
  it('uses the provisioner from the capability, and streams the events until close', async () => {
    // The middleware context as chat() hands it to adapters, reduced to what the accessors touch.
    const ctx = { capabilities: { markProvided: () => undefined }, context: { tenant: 'acme' } } as unknown as CapabilityContext & { context?: unknown }
    let served: { runId: string; call: (text: string) => Promise<unknown> } | undefined
    let closed = false
    const provisioner: ToolBridgeProvisioner = {
      provision: async ({ runId, core }) => {
        served = { runId, call: (text) => core.callTool({ name: 'echo', arguments: { text }, meta: { id: 'toolu_9' } }) }
        return { url: 'http://edge.example/runs/r2/mcp', token: 'edge-token', close: async () => void (closed = true) }
      },
    }
    provideToolBridgeProvisioner(ctx, provisioner)
    const contexts: unknown[] = []
    const tool: BridgeableTool = { ...echo, execute: ({ text }: { text: string }, context: { context?: unknown }) => (contexts.push(context.context), text) }
    const bridge = await openRunToolBridge({ tools: [tool], handle: handleWith(), runId: 'r2', capabilities: ctx, toolCallIdFrom: (meta) => meta.id as string })
    expect(bridge.url).toBe('http://edge.example/runs/r2/mcp')
    expect(bridge.token).toBe('edge-token')
    expect(bridge.tools.map((t) => t.name)).toEqual(['echo'])
    expect(served?.runId).toBe('r2')
    expect(await served!.call('yo')).toEqual({ content: [{ type: 'text', text: 'yo' }] })
    expect(contexts, "chat({ context }) reaches the tool").toEqual([{ tenant: 'acme' }])
    await bridge.close()
    expect(closed).toBe(true)
    const chunks: { name?: string; value?: { toolCallId?: string } }[] = []
    for await (const chunk of bridge.chunks) chunks.push(chunk as never)
    expect(chunks.map((c) => [c.name, c.value?.toolCallId])).toEqual([
      [TOOL_BRIDGE_CALL_EVENT, 'toolu_9'],
      ['tool-bridge.result', 'toolu_9'],
    ])
  })

  it('falls back to the host transport without a capability', async () => {
    const bridge = await openRunToolBridge({ tools: [echo], handle: handleWith(async () => ({ hostname: '127.0.0.1', listenAddress: '127.0.0.1' })), runId: 'r3' })
    try {
      const client = await connectClient(bridge.url, { token: bridge.token })
      expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'host' } }))).toBe('host')
      await client.close()
    } finally {
      await bridge.close()
    }
  })
})
