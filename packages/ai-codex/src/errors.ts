/**
 * The adapter's own error: asking the Codex adapter for something it does not
 * do. Everything else surfaces as `RUN_ERROR` chunks or core's sandbox errors.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/** Thrown when `chat()` asks for structured output (`outputSchema`), which the Codex adapter does not provide. */
export class CodexUnsupportedError extends SandboxError<'structured-output-unsupported'> {
  constructor() {
    super('structured-output-unsupported', 'codex: structured output is not supported by the Codex CLI adapter. Call chat() without outputSchema, or ask the agent to write JSON to a file in the workspace and read it with the sandbox handle.')
  }
}
