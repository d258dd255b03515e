/**
 * Structural types of the Claude Code `--output-format stream-json` lines, only
 * the fields the translator reads. Everything is optional: the CLI adds fields
 * freely, and a line that lacks one is treated as noise, never as a crash.
 * Source: lines recorded from `claude` 2.1.x (tests/fixtures/claude-code/).
 */

/** A content block of an assistant or user message. */
export interface ClaudeContentBlock {
  type?: string
  text?: string
  thinking?: string
  id?: string
  name?: string
  input?: unknown
  tool_use_id?: string
  content?: unknown
  is_error?: boolean
}

/** An Anthropic streaming event wrapped in a `stream_event` line. */
export interface ClaudeStreamEvent {
  type?: string
  index?: number
  message?: { id?: string; model?: string }
  content_block?: ClaudeContentBlock
  delta?: { type?: string; text?: string; thinking?: string; partial_json?: string; stop_reason?: string | null }
}

/** Token usage on the `result` line. */
export interface ClaudeUsage {
  input_tokens?: number
  output_tokens?: number
  cache_creation_input_tokens?: number
  cache_read_input_tokens?: number
  /** `thinking_tokens`: the part of `output_tokens` that was thinking. */
  output_tokens_details?: { thinking_tokens?: number }
}

/** One parsed line of the CLI's stdout. */
export interface ClaudeLine {
  type?: string
  subtype?: string
  session_id?: string
  parent_tool_use_id?: string | null
  api_message_id?: string
  event?: ClaudeStreamEvent
  message?: { id?: string; role?: string; model?: string; content?: ClaudeContentBlock[] | string; stop_reason?: string | null }
  // result
  is_error?: boolean
  result?: string
  errors?: unknown[]
  stop_reason?: string | null
  num_turns?: number
  duration_ms?: number
  total_cost_usd?: number
  usage?: ClaudeUsage
  api_error_status?: number | null
  permission_denials?: { tool_name?: string; tool_use_id?: string; tool_input?: unknown }[]
  // system/init
  model?: string
  tools?: string[]
  mcp_servers?: { name?: string; status?: string }[]
  permissionMode?: string
}
