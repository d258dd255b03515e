/**
 * The adapter's own error: asking the Claude Code adapter for something the
 * CLI cannot do. Everything else surfaces as `RUN_ERROR` chunks or core's
 * sandbox errors.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/** Thrown when `chat()` asks for structured output (`outputSchema`), which the CLI adapter does not provide. */
export class ClaudeCodeUnsupportedError extends SandboxError<'structured-output-unsupported'> {
  constructor() {
    super('structured-output-unsupported', 'claude-code: structured output is not supported by the Claude Code CLI adapter. Call chat() without outputSchema, or ask the agent to write JSON to a file in the workspace and read it with the sandbox handle.')
  }
}
