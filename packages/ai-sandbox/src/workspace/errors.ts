/**
 * Errors of workspace bootstrap: a failing clone or setup step. Messages name the step or secret and say how to fix it,
 * and never contain a resolved secret value.
 */
import { SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'

/** Which bootstrap phase failed. */
export type WorkspaceBootstrapErrorReason = 'source' | 'setup' | 'aborted'

/** Thrown when bootstrapping a new sandbox's workspace fails. The half-made sandbox has been destroyed. */
export class WorkspaceBootstrapError extends SandboxError<WorkspaceBootstrapErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/WorkspaceBootstrapError'
  constructor(reason: WorkspaceBootstrapErrorReason, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
  }
}

/** Thrown when a `setup` step exits non-zero. The half-made sandbox has been destroyed. */
export class SetupStepFailedError extends WorkspaceBootstrapError {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/SetupStepFailedError'
  /** 1-based position of the step in `setup`. */
  readonly step: number
  readonly command: string
  readonly exitCode: number
  /** The last lines of the step's combined stdout and stderr (secrets redacted). */
  readonly outputTail: string

  constructor(input: { step: number; command: string; exitCode: number; outputTail: string; cause?: unknown }) {
    super(
      'setup',
      `Setup step ${input.step} failed with exit code ${input.exitCode}: ${input.command}\n` +
        `--- last output ---\n${input.outputTail || '(no output)'}\n---\n` +
        `Fix the command in defineWorkspace({ setup }) (step ${input.step}) and run again; the half-made sandbox was destroyed.`,
      { cause: input.cause },
    )
    this.step = input.step
    this.command = input.command
    this.exitCode = input.exitCode
    this.outputTail = input.outputTail
  }
}
