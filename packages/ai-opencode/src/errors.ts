/**
 * The adapter's own error: asking the OpenCode adapter for something it does
 * not do. Everything else surfaces as `RUN_ERROR` chunks or core's sandbox errors.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/** Thrown when `chat()` asks for structured output (`outputSchema`), which the OpenCode adapter does not provide. */
export class OpencodeUnsupportedError extends SandboxError<'structured-output-unsupported'> {
  static override readonly brand: string = '@tanstack/ai-opencode/error/OpencodeUnsupportedError'
  constructor() {
    super('structured-output-unsupported', 'opencode: structured output is not supported by the OpenCode CLI adapter. Call chat() without outputSchema, or ask the agent to write JSON to a file in the workspace and read it with the sandbox handle.')
  }
}
