/**
 * The MCP server name of the tool bridge, in a module of its own so
 * `defineWorkspace` can reserve it without loading the bridge.
 */

/**
 * The MCP server name the tool bridge has by default and under which every
 * harness adapter declares it (the agent sees `mcp__tanstack__<tool>` in
 * Claude Code). `defineWorkspace` reserves it: an `mcpSkill` of that name
 * would be shadowed by the bridge on runs with `chat({ tools })`.
 */
export const TOOL_BRIDGE_SERVER_NAME = 'tanstack'
