/**
 * chat() tools projected into OpenCode: the run's tool bridge becomes a remote
 * MCP server `tanstack` in the inline config (`OPENCODE_CONFIG_CONTENT`), so the
 * agent calls `tanstack_<tool>`. Invariant: the token never reaches argv, a log
 * or a file. Tools that cannot run headless on the host are left out.
 * Design notes: docs/design/harness-adapters.md
 */
import type { TextOptions } from '@tanstack/ai'
import { openRunToolBridge, type BridgeableTool, type RunToolBridge, type SandboxHandle } from '@tanstack/ai-sandbox'

/** The MCP server name of the bridge: the agent sees `tanstack_<tool>`. */
export const OPENCODE_BRIDGE_SERVER = 'tanstack'
/** The CLI environment variable that carries the run's bridge token. */
export const OPENCODE_BRIDGE_TOKEN_ENV = 'TANSTACK_TOOL_BRIDGE_TOKEN'

/** The name OpenCode gives a bridged tool (server and tool names with anything but `[A-Za-z0-9_-]` replaced by `_`), e.g. `tanstack_get_weather`. */
export const opencodeBridgedToolName = (tool: string): string => `${OPENCODE_BRIDGE_SERVER}_${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`

/** What the bridge adds to one CLI run. */
export interface OpencodeToolBridgeConfig {
  /** The `mcp` entry to merge into the run's inline config (no secret inside). */
  mcp: Record<string, unknown>
  /** The token, under {@link OPENCODE_BRIDGE_TOKEN_ENV}. */
  env: Record<string, string>
}

/**
 * The inline-config `mcp` entry and environment for a bridge at `url`. Pure.
 * @example
 * ```ts
 * opencodeToolBridgeConfig({ url: 'http://127.0.0.1:4100/mcp', token }).mcp.tanstack // { type: 'remote', url, headers: { Authorization: 'Bearer {env:TANSTACK_TOOL_BRIDGE_TOKEN}' }, oauth: false, enabled: true }
 * ```
 */
export function opencodeToolBridgeConfig(input: { url: string; token: string }): OpencodeToolBridgeConfig {
  return {
    mcp: { [OPENCODE_BRIDGE_SERVER]: { type: 'remote', url: input.url, headers: { Authorization: `Bearer {env:${OPENCODE_BRIDGE_TOKEN_ENV}}` }, oauth: false, enabled: true } },
    env: { [OPENCODE_BRIDGE_TOKEN_ENV]: input.token },
  }
}

/**
 * Open the run's bridge when `chat()` passed tools that can run on the host.
 * @returns The bridge and its config, or `undefined` when there is nothing to bridge.
 * @throws ToolBridgeError from `openRunToolBridge` (a tool cannot be bridged, the sandbox cannot reach the host).
 */
export async function openOpencodeToolBridge(options: TextOptions, handle: SandboxHandle, runId: string): Promise<{ bridge: RunToolBridge; config: OpencodeToolBridgeConfig } | undefined> {
  const tools = hostRunnableTools(options)
  if (tools.length === 0) return undefined
  const bridge = await openRunToolBridge({ tools, handle, runId, capabilities: options.capabilities as never })
  return { bridge, config: opencodeToolBridgeConfig({ url: bridge.url, token: bridge.token }) }
}

function hostRunnableTools(options: TextOptions): BridgeableTool[] {
  const out: BridgeableTool[] = []
  for (const tool of options.tools ?? []) {
    if (typeof tool.execute !== 'function') options.logger.warn(`opencode: tool "${tool.name}" has no execute() on the server, so the agent in the sandbox cannot call it; it is left out.`)
    else if (tool.needsApproval) options.logger.warn(`opencode: tool "${tool.name}" needs approval, which nobody can give inside a headless run; it is left out.`)
    else out.push(tool as BridgeableTool)
  }
  return out
}
