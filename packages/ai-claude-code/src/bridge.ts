/**
 * chat() tools projected into Claude Code: the run's tool bridge becomes an
 * inline HTTP MCP server `tanstack` (`mcp__tanstack__<tool>`, allowed in
 * `--allowedTools`). Invariant: the bridge token never reaches argv, a log or
 * a file. Tools that cannot run headless on the host are left out.
 * Design notes: docs/design/harness-adapters.md
 */
import type { TextOptions } from '@tanstack/ai'
import { openRunToolBridge, type BridgeableTool, type RunToolBridge, type SandboxHandle } from '@tanstack/ai-sandbox'

/** The MCP server name of the bridge: the agent sees `mcp__tanstack__<tool>`. */
export const CLAUDE_BRIDGE_SERVER = 'tanstack'
/** The CLI environment variable that carries the run's bridge token. */
const CLAUDE_BRIDGE_TOKEN_ENV = 'TANSTACK_TOOL_BRIDGE_TOKEN'

/** The name Claude Code gives a bridged tool, e.g. `mcp__tanstack__get_weather`. */
export const claudeBridgedToolName = (tool: string): string => `mcp__${CLAUDE_BRIDGE_SERVER}__${tool}`

/** What the bridge adds to one CLI run. */
export interface ClaudeToolBridgeFlags {
  /** `--mcp-config <json>` (no secret inside). */
  args: string[]
  /** `mcp__tanstack__<tool>` for each bridged tool. */
  allowedTools: string[]
  /** The token, under `TANSTACK_TOOL_BRIDGE_TOKEN`. */
  env: Record<string, string>
}

/**
 * The flags and environment for a bridge at `url` serving `toolNames`. Pure.
 * @example
 * ```ts
 * claudeToolBridgeFlags({ url: 'http://127.0.0.1:4100/mcp', token, toolNames: ['get_weather'] }).allowedTools // ['mcp__tanstack__get_weather']
 * ```
 */
export function claudeToolBridgeFlags(input: { url: string; token: string; toolNames: readonly string[] }): ClaudeToolBridgeFlags {
  const config = { mcpServers: { [CLAUDE_BRIDGE_SERVER]: { type: 'http', url: input.url, headers: { Authorization: `Bearer \${${CLAUDE_BRIDGE_TOKEN_ENV}}` } } } }
  return { args: ['--mcp-config', JSON.stringify(config)], allowedTools: input.toolNames.map(claudeBridgedToolName), env: { [CLAUDE_BRIDGE_TOKEN_ENV]: input.token } }
}

/** Claude Code puts the model's tool-use id in each MCP call's `_meta`; bridge events carry it so they match the run's tool-call chunks. */
function claudeToolUseId(meta: Record<string, unknown>): string | undefined {
  const id = meta['claudecode/toolUseId']
  return typeof id === 'string' && id !== '' ? id : undefined
}

/**
 * Open the run's bridge when `chat()` passed tools that can run on the host.
 * @returns The bridge and its CLI flags, or `undefined` when there is nothing to bridge.
 * @throws ToolBridgeError from `openRunToolBridge` (a tool cannot be bridged, the sandbox cannot reach the host).
 */
export async function openClaudeToolBridge(options: TextOptions, handle: SandboxHandle, runId: string): Promise<{ bridge: RunToolBridge; flags: ClaudeToolBridgeFlags } | undefined> {
  const tools = hostRunnableTools(options)
  if (tools.length === 0) return undefined
  const bridge = await openRunToolBridge({ tools, handle, runId, capabilities: options.capabilities as never, toolCallIdFrom: claudeToolUseId })
  return { bridge, flags: claudeToolBridgeFlags({ url: bridge.url, token: bridge.token, toolNames: bridge.tools.map((t) => t.name) }) }
}

function hostRunnableTools(options: TextOptions): BridgeableTool[] {
  const out: BridgeableTool[] = []
  for (const tool of options.tools ?? []) {
    if (typeof tool.execute !== 'function') options.logger.warn(`claude-code: tool "${tool.name}" has no execute() on the server, so the agent in the sandbox cannot call it; it is left out.`)
    else if (tool.needsApproval) options.logger.warn(`claude-code: tool "${tool.name}" needs approval, which nobody can give inside a headless run; it is left out.`)
    else out.push(tool as BridgeableTool)
  }
  return out
}
