/**
 * Structural types of the Agent Client Protocol messages the translator reads:
 * JSON-RPC requests, notifications and responses on the `grok agent stdio`
 * wire, with only the fields it looks at. Everything is optional, because an
 * agent may add fields or send kinds this code does not know; a message that
 * lacks a field is noise, never a crash. Source: ACP v1 schema
 * (`@agentclientprotocol/sdk` 2.4.0) plus its unstable `PromptResponse.usage`.
 */

/** Who wrote a message on the wire. */
export type AcpDirection = 'agent' | 'client'

/** One entry of a recorded ACP transcript (`tests/fixtures/grok-build/<version>/<scenario>.ndjson`). */
export interface GrokAcpTranscriptEntry {
  /** `agent`: the CLI wrote it to stdout; `client`: the adapter wrote it to the CLI's stdin. */
  from: AcpDirection
  message: AcpMessage
}

/** Any JSON-RPC 2.0 message (request, notification or response). */
export interface AcpMessage {
  jsonrpc?: string
  id?: string | number | null
  method?: string
  params?: unknown
  result?: unknown
  error?: { code?: number; message?: string; data?: unknown }
}

/** A content block (ACP `ContentBlock`); only text is read. */
export interface AcpContentBlock {
  type?: string
  text?: string
  uri?: string
  resource?: { text?: string; uri?: string }
}

/** One entry of a tool call's `content` (ACP `ToolCallContent`). */
export interface AcpToolCallContent {
  type?: string
  content?: AcpContentBlock
  path?: string
  oldText?: string | null
  newText?: string
  terminalId?: string
}

/** The `update` of a `session/update` notification, all kinds merged. */
export interface AcpSessionUpdate {
  sessionUpdate?: string
  // agent_message_chunk / agent_thought_chunk / user_message_chunk
  content?: AcpContentBlock | AcpToolCallContent[] | null
  messageId?: string | null
  // tool_call / tool_call_update
  toolCallId?: string
  title?: string | null
  name?: string | null
  kind?: string | null
  status?: string | null
  locations?: { path?: string; line?: number | null }[] | null
  rawInput?: unknown
  rawOutput?: unknown
  // plan
  entries?: { content?: string; priority?: string; status?: string }[]
  // usage_update
  used?: number
  size?: number
  cost?: { amount?: number; currency?: string } | null
  // notice
  severity?: string
  description?: string | null
}

/** `session/update` params. */
export interface AcpSessionNotification {
  sessionId?: string
  update?: AcpSessionUpdate
}

/** `session/request_permission` params. */
export interface AcpPermissionRequest {
  sessionId?: string
  toolCall?: AcpSessionUpdate
  options?: { optionId?: string; name?: string; kind?: string }[]
}

/** The outcome the client answered a permission request with. */
export interface AcpPermissionOutcome {
  outcome?: { outcome?: string; optionId?: string }
}

/** `initialize` result. */
export interface AcpInitializeResult {
  protocolVersion?: number
  agentInfo?: { name?: string; title?: string | null; version?: string } | null
  agentCapabilities?: {
    loadSession?: boolean
    mcpCapabilities?: { http?: boolean; sse?: boolean }
    sessionCapabilities?: { resume?: unknown }
  }
  authMethods?: { id?: string; name?: string }[]
}

/** Token usage on a `session/prompt` result (ACP unstable `Usage`). */
export interface AcpUsage {
  inputTokens?: number
  outputTokens?: number
  totalTokens?: number
  thoughtTokens?: number | null
  cachedReadTokens?: number | null
  cachedWriteTokens?: number | null
}

/** `session/prompt` result. */
export interface AcpPromptResult {
  stopReason?: string
  usage?: AcpUsage | null
}
