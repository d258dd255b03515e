/**
 * The typed errors of `@tanstack/ai-sandbox-sqlite`. Both extend `SandboxError`
 * from `@tanstack/ai-sandbox`, so `SandboxError.isInstance` recognises them and
 * `reason` is what a caller branches on.
 */
import { SandboxError, type SandboxErrorOptions } from '@tanstack/ai-sandbox'

/**
 * Why the database could not serve a call: `open-failed` (the file could not be
 * opened or set up: a missing directory, no permission, not a SQLite file),
 * `schema-too-new` (a newer version of this package migrated the file), `closed`
 * (the stores were closed), `corrupt-row` (a row holds a value no version of
 * this package writes, e.g. an unknown run status).
 */
export type SqliteDatabaseErrorReason = 'open-failed' | 'schema-too-new' | 'closed' | 'corrupt-row'

/**
 * The SQLite database behind the stores cannot be used.
 *
 * @example
 * ```ts
 * try { createSqliteStores({ path: './runs.db' }) }
 * catch (error) { if (SqliteDatabaseError.isInstance(error) && error.reason === 'schema-too-new') upgradePackage() }
 * ```
 */
export class SqliteDatabaseError extends SandboxError<SqliteDatabaseErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox-sqlite/error/SqliteDatabaseError'
  /** The database file (or `:memory:`) as it was given. */
  readonly path: string

  constructor(reason: SqliteDatabaseErrorReason, path: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.path = path
  }
}

/**
 * Why a stream-log call was refused: `invalid-run-id` (empty, or holds CR/LF),
 * `invalid-offset` (not `-1`, `now` or an offset this log minted),
 * `unknown-run` (a resume from an offset of a run that has nothing stored),
 * `no-data` (a from-start join waited `firstChunkDeadlineMs` and no chunk came),
 * `invalid-upsert` (a sparse batch, a repeated offset, or a new offset that is
 * not the next one), `unserializable-chunk` (a chunk JSON cannot hold: a
 * BigInt, a cycle; nothing of its batch is stored).
 */
export type SqliteStreamErrorReason = 'invalid-run-id' | 'invalid-offset' | 'unknown-run' | 'no-data' | 'invalid-upsert' | 'unserializable-chunk' | 'log-closed'

/**
 * A call on a run's stream log was refused. Thrown by `read`, `upsert` and by
 * `stream(source)` itself (an invalid run id); `append` and `upsert` throw
 * `log-closed` on a log that was closed (a finished run's transcript is final).
 *
 * @example
 * ```ts
 * if (SqliteStreamError.isInstance(error) && error.reason === 'no-data') showRunGone()
 * ```
 */
export class SqliteStreamError extends SandboxError<SqliteStreamErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox-sqlite/error/SqliteStreamError'
  /** The run whose log was called. */
  readonly runId: string

  constructor(reason: SqliteStreamErrorReason, runId: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.runId = runId
  }
}

/**
 * How a lease was lost: `taken` (another holder has the key now), `expired`
 * (renewal came too late, e.g. the process was paused or its event loop
 * blocked past `leaseMs`), `renewal-failed` (the renewal itself threw, e.g. the
 * database was closed or stayed locked past `busy_timeout`).
 */
export type SqliteLockLostReason = 'taken' | 'expired' | 'renewal-failed'

/**
 * The `reason` of the signal `withLock` hands its callback, once the lease on
 * the key is lost. The callback must stop externally visible writes when the
 * signal aborts: another holder may already own the key.
 *
 * @example
 * ```ts
 * await stores.locks.withLock('run:1', async (signal) => {
 *   signal.addEventListener('abort', () => console.log((signal.reason as SqliteLockLostError).reason))
 * })
 * ```
 */
export class SqliteLockLostError extends SandboxError<SqliteLockLostReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox-sqlite/error/SqliteLockLostError'
  /** The lock key. */
  readonly key: string

  constructor(reason: SqliteLockLostReason, key: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.key = key
  }
}
