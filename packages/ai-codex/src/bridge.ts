/**
 * chat() tools projected into Codex: the run's tool bridge becomes a
 * streamable-HTTP MCP server `tanstack` declared with per-run `-c` overrides
 * (`mcp__tanstack__<tool>`). Invariant: the token never reaches argv, a log or
 * a file. Tools that cannot run headless on the host are left out.
 * Design notes: docs/design/harness-adapters.md
 */
import type { TextOptions } from '@tanstack/ai'
import { openRunToolBridge, type BridgeableTool, type RunToolBridge, type SandboxHandle } from '@tanstack/ai-sandbox'
import { codexConfigFlag } from './command.js'

/** The MCP server name of the bridge: the agent sees `mcp__tanstack__<tool>`. */
export const CODEX_BRIDGE_SERVER = 'tanstack'
/** The CLI environment variable that carries the run's bridge token. */
export const CODEX_BRIDGE_TOKEN_ENV = 'TANSTACK_TOOL_BRIDGE_TOKEN'

/** What the bridge adds to one CLI run. */
export interface CodexToolBridgeFlags {
  /** `-c mcp_servers.tanstack.*` overrides (no secret inside). */
  config: string[]
  /** The token, under {@link CODEX_BRIDGE_TOKEN_ENV}. */
  env: Record<string, string>
}

/**
 * The overrides and environment for a bridge at `url`. Pure.
 * @example
 * ```ts
 * codexToolBridgeFlags({ url: 'http://127.0.0.1:4100/mcp', token }).config
 * // ['mcp_servers.tanstack.url="http://127.0.0.1:4100/mcp"', 'mcp_servers.tanstack.bearer_token_env_var="TANSTACK_TOOL_BRIDGE_TOKEN"', …]
 * ```
 */
export function codexToolBridgeFlags(input: { url: string; token: string }): CodexToolBridgeFlags {
  const key = (field: string) => `mcp_servers.${CODEX_BRIDGE_SERVER}.${field}`
  return {
    config: [
      codexConfigFlag(key('url'), input.url),
      codexConfigFlag(key('bearer_token_env_var'), CODEX_BRIDGE_TOKEN_ENV),
      // The run cannot work without its tools: fail at start rather than run without them.
      codexConfigFlag(key('required'), true),
      // They are the app's own tools (those needing approval are left out): nobody is there to approve a call.
      codexConfigFlag(key('default_tools_approval_mode'), 'approve'),
    ],
    env: { [CODEX_BRIDGE_TOKEN_ENV]: input.token },
  }
}

/**
 * Open the run's bridge when `chat()` passed tools that can run on the host.
 * @returns The bridge and its CLI flags, or `undefined` when there is nothing to bridge.
 * @throws ToolBridgeError from `openRunToolBridge` (a tool cannot be bridged, the sandbox cannot reach the host).
 */
export async function openCodexToolBridge(options: TextOptions, handle: SandboxHandle, runId: string): Promise<{ bridge: RunToolBridge; flags: CodexToolBridgeFlags } | undefined> {
  const tools = hostRunnableTools(options)
  if (tools.length === 0) return undefined
  const bridge = await openRunToolBridge({ tools, handle, runId, capabilities: options.capabilities as never })
  return { bridge, flags: codexToolBridgeFlags({ url: bridge.url, token: bridge.token }) }
}

function hostRunnableTools(options: TextOptions): BridgeableTool[] {
  const out: BridgeableTool[] = []
  for (const tool of options.tools ?? []) {
    if (typeof tool.execute !== 'function') options.logger.warn(`codex: tool "${tool.name}" has no execute() on the server, so the agent in the sandbox cannot call it; it is left out.`)
    else if (tool.needsApproval) options.logger.warn(`codex: tool "${tool.name}" needs approval, which nobody can give inside a headless run; it is left out.`)
    else out.push(tool as BridgeableTool)
  }
  return out
}
