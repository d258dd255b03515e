/**
 * The adapter's own error: asking the Codex adapter for something it does not
 * do. Everything else surfaces as `RUN_ERROR` chunks or core's sandbox errors.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/**
 * Thrown by the adapter's `structuredOutput()`, which a CLI run cannot serve on
 * its own (it has no sandbox). `chat({ outputSchema })` never calls it: the
 * adapter takes the schema in `chatStream` (`--output-schema`).
 */
export class CodexUnsupportedError extends SandboxError<'structured-output-unsupported'> {
  static override readonly brand: string = '@tanstack/ai-codex/error/CodexUnsupportedError'
  constructor() {
    super('structured-output-unsupported', 'codex: structuredOutput() cannot run on its own, because a Codex run needs the sandbox that chat() provides. Call chat({ adapter, outputSchema, middleware: [withSandbox(sandbox)] }), which runs the CLI with --output-schema.')
  }
}
