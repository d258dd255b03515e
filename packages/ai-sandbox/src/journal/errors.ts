/**
 * The error of the run journal's own operations: a run id that cannot name a
 * journal, a sandbox that lacks the tools the journal shell needs, a journal
 * whose bytes or command output cannot be read. Attach-time diagnoses
 * (`JournalAttachUnavailableError`) live in `attach-preflight.ts`.
 */
import { SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'
import { MAX_RUN_ID_LENGTH } from '../contracts/run-id.js'

/**
 * Why a journal operation failed: `invalid-run-id` (an id that breaks
 * the run-id rule of `assertValidRunId`), `journal-unsupported`
 * (the sandbox shell lacks `od`, `sha256sum` or `/dev/urandom`, which the exit
 * sentinel's nonce needs), `read-failed` (a journal command failed or printed
 * something this module does not understand), `journal-exists` (a launch
 * found the run's journal there already: its agent was started elsewhere),
 * `journal-rewritten` (the
 * journal no longer starts with the header its shell wrote, or not with the
 * one the provider's `journalSecret` gives: the agent or another process of
 * its user rewrote it, so it cannot say how the run ended).
 */
export type JournalErrorReason = 'invalid-run-id' | 'journal-unsupported' | 'read-failed' | 'journal-rewritten' | 'journal-exists'

/** The longest run id a journal accepts, in UTF-16 code units (its encoded path stays under Linux's `PATH_MAX`). */
export const MAX_JOURNAL_RUN_ID_LENGTH = MAX_RUN_ID_LENGTH

/**
 * Thrown by the journal's commands and readers. Branch on `reason`.
 *
 * @example
 * ```ts
 * try { journalPaths(runId) } catch (error) { if (JournalError.isInstance(error) && error.reason === 'invalid-run-id') badRequest() }
 * ```
 */
export class JournalError extends SandboxError<JournalErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/JournalError'
  /** The run the journal belongs to, when known. */
  readonly runId: string | undefined

  constructor(reason: JournalErrorReason, message: string, options: SandboxErrorOptions & { runId?: string } = {}) {
    super(reason, message, options)
    this.runId = options.runId
  }
}
