/**
 * chat() tools projected into Grok Build: the run's tool bridge becomes an
 * HTTP MCP server named `tanstack` in the `mcpServers` of ACP's
 * `session/new` / `session/load`, so the agent calls the host's tools by
 * name. The bearer token travels only inside that request on the CLI's
 * stdin, never in argv, a file or a log. Tools that cannot run headless on
 * the host (no `execute`, or `needsApproval`) are left out with a warning.
 */
import type { TextOptions } from '@tanstack/ai'
import { openRunToolBridge, type BridgeableTool, type RunToolBridge, type SandboxHandle } from '@tanstack/ai-sandbox'
import type { GrokMcpServer } from './projection.js'

/** The MCP server name of the bridge. */
export const GROK_BRIDGE_SERVER = 'tanstack'

/**
 * The ACP `McpServer` entry for a bridge at `url`. Pure.
 * @example
 * ```ts
 * grokBridgeServer({ url: 'http://127.0.0.1:4100/mcp', token: 't' }) // { type: 'http', name: 'tanstack', url, headers: [{ name: 'Authorization', value: 'Bearer t' }] }
 * ```
 */
export function grokBridgeServer(input: { url: string; token: string }): GrokMcpServer {
  return { type: 'http', name: GROK_BRIDGE_SERVER, url: input.url, headers: [{ name: 'Authorization', value: `Bearer ${input.token}` }] }
}

/**
 * Open the run's bridge when `chat()` passed tools that can run on the host.
 * @returns The bridge, or `undefined` when there is nothing to bridge.
 * @throws ToolBridgeError from `openRunToolBridge` (a tool cannot be bridged, the sandbox cannot reach the host).
 */
export async function openGrokToolBridge(options: TextOptions, handle: SandboxHandle, runId: string): Promise<RunToolBridge | undefined> {
  const tools: BridgeableTool[] = []
  for (const tool of options.tools ?? []) {
    if (typeof tool.execute !== 'function') options.logger.warn(`grok-build: tool "${tool.name}" has no execute() on the server, so the agent in the sandbox cannot call it; it is left out.`)
    else if (tool.needsApproval) options.logger.warn(`grok-build: tool "${tool.name}" needs approval, which nobody can give inside a headless run; it is left out.`)
    else tools.push(tool as BridgeableTool)
  }
  if (tools.length === 0) return undefined
  return openRunToolBridge({ tools, handle, runId, capabilities: options.capabilities as never })
}
