/**
 * The one error class of the quickstart. Every failure the demo reports to
 * the terminal is a `DemoError` whose `reason` says which step failed and
 * whose message says how to fix it; `main.ts` prints the message and exits
 * non-zero. It extends `SandboxError` so `SandboxError.isInstance` sees it too.
 */
import { SandboxError } from '@tanstack/ai-sandbox'

/** Why the demo stopped. */
export type DemoErrorReason =
  | 'usage' // a bad command-line flag
  | 'unsupported-provider' // --provider names an unknown provider, or --image comes without --provider docker
  | 'docker' // --provider docker, but no engine answers or the image is missing
  | 'missing-api-key' // --live without ANTHROPIC_API_KEY
  | 'cli-missing' // the claude native binary is not installed
  | 'repo' // --repo is not a git repository, or the sample repository could not be made
  | 'run-failed' // the agent run ended with RUN_ERROR
  | 'no-changes' // the offline script finished but changed no file
  | 'aborted' // the run was interrupted (Ctrl-C)

/** A failure of the quickstart, with a message meant for the person at the terminal. */
export class DemoError extends SandboxError<DemoErrorReason> {
  /** The `RUN_ERROR` code when `reason` is `run-failed` (e.g. `cli_exit`, `api_error_401`). */
  readonly code: string | undefined

  constructor(reason: DemoErrorReason, message: string, options: { cause?: unknown; code?: string } = {}) {
    super(reason, message, options.cause === undefined ? {} : { cause: options.cause })
    this.code = options.code
  }
}
