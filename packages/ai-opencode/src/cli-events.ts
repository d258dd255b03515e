/**
 * Structural types of the `opencode run --format json` lines, only the fields
 * the translator reads. Everything is optional: the CLI adds fields freely,
 * and a line that lacks one is treated as noise, never as a crash.
 * Source: lines recorded from `opencode` 1.18.x (tests/fixtures/opencode/).
 */

/** Token counts of one model step (`step_finish`). `input` excludes cached tokens. */
export interface OpencodeTokens {
  total?: number
  input?: number
  output?: number
  reasoning?: number
  cache?: { read?: number; write?: number }
}

/** The state of a finished tool call. The CLI prints a tool only once it completed or failed. */
export interface OpencodeToolState {
  status?: string
  input?: unknown
  output?: unknown
  error?: unknown
  title?: string
  metadata?: Record<string, unknown>
}

/** A message part: `step-start`, `text`, `reasoning`, `tool` or `step-finish`. */
export interface OpencodePart {
  id?: string
  type?: string
  messageID?: string
  sessionID?: string
  text?: string
  // tool
  tool?: string
  callID?: string
  state?: OpencodeToolState
  // step-finish
  reason?: string
  tokens?: OpencodeTokens
  cost?: number
}

/** A session error (`error` line), e.g. `{ name: 'APIError', data: { message, statusCode } }`. */
export interface OpencodeError {
  name?: string
  data?: { message?: string; statusCode?: number; providerID?: string; [key: string]: unknown }
}

/** One parsed line of the CLI's stdout. */
export interface OpencodeLine {
  /** `step_start`, `text`, `reasoning` (with `--thinking`), `tool_use`, `step_finish` or `error`. */
  type?: string
  timestamp?: number
  sessionID?: string
  part?: OpencodePart
  error?: OpencodeError
}
