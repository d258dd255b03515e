/**
 * Structural types of the `codex exec --json` lines, only the fields the
 * translator reads. Everything is optional: the CLI adds fields freely, and a
 * line that lacks one is treated as noise, never as a crash.
 * Source: lines recorded from `codex` 0.171.x (tests/fixtures/codex/).
 */

/** Token usage on `turn.completed` (for a resumed thread: the whole thread's totals). */
export interface CodexUsage {
  input_tokens?: number
  cached_input_tokens?: number
  cache_write_input_tokens?: number
  output_tokens?: number
  reasoning_output_tokens?: number
}

/** One change of a `file_change` item. */
export interface CodexFileChange {
  path?: string
  kind?: string
}

/** An MCP content block in an `mcp_tool_call` result. */
export interface CodexMcpContent {
  type?: string
  text?: string
}

/** A thread item: what the agent said, thought or did. */
export interface CodexItem {
  id?: string
  type?: string
  /** `agent_message`, `reasoning`, `error`. */
  text?: string
  message?: string
  /** `command_execution`. */
  command?: string
  aggregated_output?: string
  exit_code?: number | null
  status?: string
  /** `file_change`. */
  changes?: CodexFileChange[]
  /** `mcp_tool_call`. */
  server?: string
  tool?: string
  arguments?: unknown
  result?: { content?: CodexMcpContent[]; structured_content?: unknown } | null
  error?: { message?: string } | null
  /** `web_search`. */
  query?: string
}

/** One parsed line of the CLI's stdout. */
export interface CodexLine {
  type?: string
  /** `thread.started`. */
  thread_id?: string
  /** `item.started`, `item.updated`, `item.completed`. */
  item?: CodexItem
  /** `turn.completed`. */
  usage?: CodexUsage
  /** `turn.failed`. */
  error?: { message?: string }
  /** `error`. */
  message?: string
}
