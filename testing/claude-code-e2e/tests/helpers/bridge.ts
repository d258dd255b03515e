/**
 * Helpers of the tool-bridge suites: one chat() run with `tools`, a
 * provisioner spy (the default host transport, injected through the
 * capability so the test learns the URL and token the run used), the tool
 * results the CLI sent back to the model, and raw MCP requests for the token
 * checks. The fixtures are shared by the local-process and Docker suites.
 */
import { chat, defineChatMiddleware, type ModelMessage, type StreamChunk, type Tool } from '@tanstack/ai'
import type { JournalEntry } from '@copilotkit/aimock'
import type { claudeCodeText } from '@tanstack/ai-claude-code'
import { hostToolBridgeProvisioner, provideToolBridgeProvisioner, ToolBridgeProvisionerCapability, withSandbox, type ProvisionedToolBridge, type SandboxDefinition } from '@tanstack/ai-sandbox'
import type { Outcome } from './run-claude.js'

/** One chat() run with tools (and extra middleware after withSandbox); collects what a user would see. */
export async function runWithTools(input: {
  adapter: ReturnType<typeof claudeCodeText>
  sandbox: SandboxDefinition
  threadId: string
  messages: ModelMessage[]
  tools: Tool<any, any, any>[]
  middleware?: unknown[]
}): Promise<Outcome> {
  const outcome: Outcome = { chunks: [], text: '' }
  const stream = chat({
    adapter: input.adapter,
    threadId: input.threadId,
    messages: input.messages,
    tools: input.tools,
    middleware: [withSandbox(input.sandbox), ...(input.middleware ?? [])],
  } as unknown as Parameters<typeof chat>[0]) as AsyncIterable<StreamChunk>
  for await (const chunk of stream) {
    outcome.chunks.push(chunk)
    if (chunk.type === 'TEXT_MESSAGE_CONTENT') outcome.text += chunk.delta
    if (chunk.type === 'RUN_ERROR') outcome.error = { message: chunk.message, ...(chunk.code ? { code: chunk.code } : {}) }
  }
  return outcome
}

/** What the spy saw of one provisioned bridge. */
export interface SeenBridge {
  /** The URL given to the agent (inside the sandbox). */
  url: string
  /** The same endpoint as the host reaches it (the listen address). */
  hostUrl: string
  token: string
  closed: boolean
}

/**
 * The default host provisioner behind the capability, recording each bridge.
 * @returns The middleware to add after withSandbox, and what it saw.
 */
export function provisionerSpy(): { middleware: unknown; bridges: SeenBridge[] } {
  const bridges: SeenBridge[] = []
  const inner = hostToolBridgeProvisioner()
  const middleware = defineChatMiddleware({
    name: 'tool-bridge-spy',
    provides: [ToolBridgeProvisionerCapability],
    setup(ctx) {
      provideToolBridgeProvisioner(ctx, {
        provision: async (input) => {
          const provisioned: ProvisionedToolBridge = await inner.provision(input)
          const access = await input.handle.hostAccess!()
          const url = new URL(provisioned.url)
          url.hostname = access!.listenAddress
          const seen: SeenBridge = { url: provisioned.url, hostUrl: url.toString(), token: provisioned.token, closed: false }
          bridges.push(seen)
          return { ...provisioned, close: async () => ((seen.closed = true), provisioned.close()) }
        },
      })
    },
  })
  return { middleware, bridges }
}

/** The `tool` messages of a journaled model request: what the CLI sent back for each tool call. */
export function toolResultsOf(entry: JournalEntry): { toolCallId: string; content: string }[] {
  const messages = ((entry.body ?? {}) as { messages?: { role: string; content: unknown; tool_call_id?: string }[] }).messages ?? []
  return messages.filter((m) => m.role === 'tool').map((m) => ({ toolCallId: m.tool_call_id ?? '', content: typeof m.content === 'string' ? m.content : JSON.stringify(m.content) }))
}

/** POST a raw MCP `tools/call` to a bridge with the given Authorization header (none when `undefined`). */
export function postToolCall(url: string, authorization: string | undefined, name: string, args: unknown): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18', ...(authorization !== undefined ? { authorization } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  })
}

/**
 * The fake model's script for the bridge suites: a lookup that succeeds, a
 * charge that throws on the host, each answered once the CLI sends the tool
 * result back (matched by the tool-call id).
 */
export const BRIDGE_FIXTURES = [
  { match: { toolCallId: 'toolu_bridge_lookup' }, response: { content: 'Order A-17 has shipped.' } },
  { match: { userMessage: 'Where is order A-17?' }, response: { toolCalls: [{ id: 'toolu_bridge_lookup', name: 'mcp__tanstack__lookup_order', arguments: { orderId: 'A-17' } }] } },
  { match: { toolCallId: 'toolu_bridge_charge' }, response: { content: 'The charge failed.' } },
  { match: { userMessage: 'Charge the card' }, response: { toolCalls: [{ id: 'toolu_bridge_charge', name: 'mcp__tanstack__charge_card', arguments: { cents: 1999 } }] } },
]
