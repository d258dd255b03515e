/**
 * The adapter's own error: asking the Claude Code adapter for something the
 * CLI cannot do. Everything else surfaces as `RUN_ERROR` chunks or core's
 * sandbox errors.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/**
 * Thrown by the adapter's `structuredOutput()`, which a CLI run cannot serve on
 * its own (it has no sandbox). `chat({ outputSchema })` never calls it: the
 * adapter takes the schema in `chatStream` (`--json-schema`).
 */
export class ClaudeCodeUnsupportedError extends SandboxError<'structured-output-unsupported'> {
  static override readonly brand: string = '@tanstack/ai-claude-code/error/ClaudeCodeUnsupportedError'
  constructor() {
    super('structured-output-unsupported', 'claude-code: structuredOutput() cannot run on its own, because a Claude Code run needs the sandbox that chat() provides. Call chat({ adapter, outputSchema, middleware: [withSandbox(sandbox)] }), which runs the CLI with --json-schema.')
  }
}
