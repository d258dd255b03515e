/**
 * The adapter's own error: asking the Grok Build adapter for something it
 * cannot do. Everything else surfaces as `RUN_ERROR` chunks or core's
 * sandbox errors.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/** Thrown when `chat()` asks for structured output (`outputSchema`), which the CLI adapter does not provide. */
export class GrokBuildUnsupportedError extends SandboxError<'structured-output-unsupported'> {
  static override readonly brand: string = '@tanstack/ai-grok-build/error/GrokBuildUnsupportedError'
  constructor() {
    super('structured-output-unsupported', 'grok-build: structured output is not supported by the Grok Build adapter. Call chat() without outputSchema, or ask the agent to write JSON to a file in the workspace and read it with the sandbox handle.')
  }
}
