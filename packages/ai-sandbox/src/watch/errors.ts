/**
 * Errors of workspace watching. Only starting a watcher throws; a failure while
 * it runs is logged under the `sandbox` debug category and the next poll or
 * flush tries again.
 */
import { SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'

/** `list-failed`: the workspace listing (`find` + `stat` through `exec`) did not run. */
export type WorkspaceWatchErrorReason = 'list-failed'

/** Thrown by `watchWorkspace` when the workspace cannot be listed. */
export class WorkspaceWatchError extends SandboxError<WorkspaceWatchErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/WorkspaceWatchError'
  constructor(reason: WorkspaceWatchErrorReason, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
  }
}
