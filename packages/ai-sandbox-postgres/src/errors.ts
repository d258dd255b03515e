/**
 * The typed errors of `@tanstack/ai-sandbox-postgres`. Each extends
 * `SandboxError` from `@tanstack/ai-sandbox`, so `SandboxError.isInstance`
 * recognises them and `reason` is what a caller branches on. A refused
 * fenced write is core's `StaleEpochError`, not a class of this package.
 */
import { SandboxError, type SandboxErrorOptions } from '@tanstack/ai-sandbox'

/**
 * Why the database could not serve a call: `connect-failed` (no connection
 * could be opened: wrong URL, server down, authentication refused),
 * `schema-too-new` (a newer version of this package migrated the schema),
 * `schema-conflict` (the schema holds another tool's `schema_migrations`
 * table, e.g. Rails': give the stores a schema of their own),
 * `schema-missing` (the tables are not there: run `migratePostgres` first),
 * `closed` (the stores or their pool were closed), `query-failed` (the server
 * refused a statement; the driver's error, with its SQLSTATE `code`, is the
 * `cause`), `corrupt-row` (a row holds a value no version of this package
 * writes, e.g. an unknown run status).
 */
export type PostgresDatabaseErrorReason = 'connect-failed' | 'schema-too-new' | 'schema-conflict' | 'schema-missing' | 'closed' | 'query-failed' | 'corrupt-row'

/**
 * The PostgreSQL database behind the stores cannot be used.
 *
 * @example
 * ```ts
 * try { await createPostgresStores({ connectionString }) }
 * catch (error) { if (PostgresDatabaseError.isInstance(error) && error.reason === 'connect-failed') console.error('is PostgreSQL running?') }
 * ```
 */
export class PostgresDatabaseError extends SandboxError<PostgresDatabaseErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox-postgres/error/PostgresDatabaseError'
  /** The PostgreSQL schema the stores live in. */
  readonly schema: string

  constructor(reason: PostgresDatabaseErrorReason, schema: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.schema = schema
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
export type PostgresStreamErrorReason = 'invalid-run-id' | 'invalid-offset' | 'unknown-run' | 'no-data' | 'invalid-upsert' | 'unserializable-chunk' | 'log-closed'

/**
 * A call on a run's stream log was refused. Thrown by `read`, `upsert` and by
 * `stream(source)` itself (an invalid run id); `append` and `upsert` throw
 * `log-closed` on a log that was closed (a finished run's transcript is final).
 *
 * @example
 * ```ts
 * if (PostgresStreamError.isInstance(error) && error.reason === 'no-data') console.log('the run is gone')
 * ```
 */
export class PostgresStreamError extends SandboxError<PostgresStreamErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox-postgres/error/PostgresStreamError'
  /** The run whose log was called. */
  readonly runId: string

  constructor(reason: PostgresStreamErrorReason, runId: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.runId = runId
  }
}

/**
 * How a lease was lost: `taken` (another holder has the key now), `expired`
 * (no renewal succeeded before shortly ahead of the lease's end, e.g. the
 * process was paused or cut off from the database), `renewal-failed` (a
 * renewal threw, or the connection the lease is renewed through was lost).
 */
export type PostgresLockLostReason = 'taken' | 'expired' | 'renewal-failed'

/**
 * The `reason` of the signal `withLock` hands its callback, once the lease on
 * the key is lost. The callback must stop externally visible writes when the
 * signal aborts: another holder may own the key already, or soon.
 *
 * @example
 * ```ts
 * await stores.locks.withLock('run:1', async (signal) => {
 *   signal.addEventListener('abort', () => console.log((signal.reason as PostgresLockLostError).reason))
 * })
 * ```
 */
export class PostgresLockLostError extends SandboxError<PostgresLockLostReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox-postgres/error/PostgresLockLostError'
  /** The lock key. */
  readonly key: string

  constructor(reason: PostgresLockLostReason, key: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.key = key
  }
}
