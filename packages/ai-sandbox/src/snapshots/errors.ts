/**
 * The one error family of portable snapshots: a capture that meets something
 * it must not store, a restore whose manifest or blobs do not verify, a
 * sandbox command that failed. Invariant: a message never holds a resolved
 * secret value (sandbox output is scrubbed before it is quoted), and `path`
 * names the entry concerned whenever there is one.
 */
import { SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'

/**
 * Why a capture or a restore stopped.
 *
 * Capture: `symlink`, `executable` (a regular file with any x bit),
 * `special-file` (FIFO, socket, device), `file-too-large` (past
 * `maxFileBytes`), `invalid-path` (a name that is not UTF-8), `secret-in-path`
 * (a path that holds a secret value: it cannot be zeroed), `changed` (the tree
 * changed while it was read), `sandbox-failed` (a command in the sandbox
 * failed: listing, archive, staging, extraction).
 *
 * Restore: `invalid-manifest` (shape, order, modes, duplicate or nested
 * entries), `manifest-hash-mismatch`, `unsafe-path` (absolute, `..`, `.`, an
 * empty segment, NUL, too long), `blob-missing`, `blob-mismatch` (wrong
 * SHA-256 or size).
 *
 * Checkpoints (`createSandboxSnapshots`, `withSandbox({ snapshots })`):
 * `lease-held` (another writer holds the thread's lease), `lease-lost` (the
 * lease expired and was taken, or was fenced, before the write), `head-moved`
 * (another checkpoint landed since this one was begun), `not-reusable`
 * (`save` on a sandbox with `reuse: 'none'`), `no-live-sandbox` (`save` with
 * no live sandbox for the thread), `fork-unsupported` (the checkpoint store
 * has no `forkFromCheckpoint`), `target-not-empty` (a fork into a thread that
 * has checkpoints, messages or artifacts), `checkpoint-not-found` (no such
 * checkpoint in the thread), `artifact-not-found`, `persistence-missing`
 * (`withSandbox({ snapshots })` without `withPersistence(snapshots.persistence)`
 * before it).
 */
export type SandboxSnapshotErrorReason =
  | 'symlink'
  | 'executable'
  | 'special-file'
  | 'file-too-large'
  | 'invalid-path'
  | 'secret-in-path'
  | 'changed'
  | 'sandbox-failed'
  | 'invalid-manifest'
  | 'manifest-hash-mismatch'
  | 'unsafe-path'
  | 'blob-missing'
  | 'blob-mismatch'
  | 'lease-held'
  | 'lease-lost'
  | 'head-moved'
  | 'not-reusable'
  | 'no-live-sandbox'
  | 'fork-unsupported'
  | 'target-not-empty'
  | 'checkpoint-not-found'
  | 'artifact-not-found'
  | 'persistence-missing'

/**
 * Thrown by `captureSandboxWorkspace`, `restoreSandboxWorkspace`, the
 * methods of `createSandboxSnapshots` and a run of `withSandbox({ snapshots })`. Branch
 * on `reason`; `path` is the workspace-relative path of the entry concerned
 * (the first one, in manifest order, when several are).
 *
 * @example
 * ```ts
 * try { await captureSandboxWorkspace(handle, { putBlob }) }
 * catch (error) { if (SandboxSnapshotError.isInstance(error) && error.reason === 'symlink') console.log(`remove or exclude ${error.path}`) }
 * ```
 */
export class SandboxSnapshotError extends SandboxError<SandboxSnapshotErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/SandboxSnapshotError'
  /** The workspace-relative path concerned, when there is one. */
  readonly path: string | undefined

  constructor(reason: SandboxSnapshotErrorReason, message: string, options: SandboxErrorOptions & { path?: string } = {}) {
    super(reason, message, options)
    this.path = options.path
  }
}
