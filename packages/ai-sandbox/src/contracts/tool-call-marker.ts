/**
 * The stored marker of a tool call the harness ran inside the sandbox:
 * `{ sandboxObserved: true }` in `metadata` (spec 002 fixes it for stored
 * transcripts, so renaming it is a data change), and the reader that also
 * knows the key earlier versions wrote.
 */

/**
 * Metadata key (value `true`) marking a tool call, tool message or assistant
 * message as run by the harness inside the sandbox: `{ sandboxObserved: true }`,
 * the marker spec 002 fixes for stored transcripts.
 */
export const SANDBOX_TOOL_CALL_KEY = 'sandboxObserved'

/** The key versions before this one wrote; still recognised when reading a stored transcript, never written. */
const LEGACY_SANDBOX_TOOL_CALL_KEY = 'sandboxToolCall'

/**
 * True for a tool call (a `ModelMessage` tool call or a UI `tool-call` part)
 * that `withSandbox` recorded as run by the harness inside the sandbox: its
 * `metadata` has `sandboxObserved: true` (or `sandboxToolCall: true`, the key
 * earlier versions of this package wrote).
 *
 * @example
 * ```ts
 * const cards = message.toolCalls?.filter(isSandboxToolCall) ?? []
 * ```
 */
export function isSandboxToolCall(toolCall: { metadata?: unknown } | null | undefined): boolean {
  const metadata = toolCall?.metadata
  if (typeof metadata !== 'object' || metadata === null) return false
  const fields = metadata as Record<string, unknown>
  return fields[SANDBOX_TOOL_CALL_KEY] === true || fields[LEGACY_SANDBOX_TOOL_CALL_KEY] === true
}
