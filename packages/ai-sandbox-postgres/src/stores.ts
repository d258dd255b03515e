/**
 * `createPostgresStores`: the four stores of a durable `withSandbox` (runs,
 * locks, sandbox instances, the event log) and the portable-snapshot
 * persistence over one PostgreSQL database that every replica reaches. Owns the option schema, the migration at start-up
 * and the pool's lifetime (only a pool it opened is ended by `close`); the
 * stores own their tables.
 */
import type { LockStore } from '@tanstack/ai/locks'
import { parseOptions, type LockProbe, type SandboxInstanceStore, type SandboxSnapshotPersistence } from '@tanstack/ai-sandbox'
import pg from 'pg'
import { z } from 'zod'
import { contextOf, databaseError, DEFAULT_SCHEMA, migratePostgres, schemaName, type MigrationResult, type PostgresPool } from './database.js'
import { instanceStoreOf } from './instance-store.js'
import { detectDeadHoldersSchema, leaseMsSchema, lockPollMsSchema, lockStoreOf } from './lock-store.js'
import { notifierOf } from './notifier.js'
import { runStoreOf, type PostgresRunStore } from './run-store.js'
import { snapshotPersistenceOf } from './snapshot-stores.js'
import { firstChunkDeadlineMsSchema, recheckMsSchema, streamOf, type PostgresStream, type PostgresStreamInit } from './stream.js'

/** Options of {@link createPostgresStores}: exactly one of `connectionString` and `pool`. */
export interface PostgresStoresOptions {
  /** A PostgreSQL URL (`postgres://user:password@host:5432/db`); the stores open their own pool on it and end it on `close()`. */
  connectionString?: string
  /** Your node-postgres `Pool` instead; `close()` leaves it open (end it yourself, after `close()`). */
  pool?: PostgresPool
  /** Connections of the pool opened from `connectionString` (default 10). The lock store keeps one checked out while a lock is held, the tails one while anyone reads. */
  maxConnections?: number
  /** The schema the tables live in (default `tanstack_sandbox`): two apps sharing a database each give their own. Lowercase letters, digits and `_`. */
  schema?: string
  /** Create or upgrade the tables before returning (default `true`); `false` when you run `migratePostgres` at deploy time. */
  migrate?: boolean
  /** Lock lease in ms (default 10 000): how long a key stays held by a process that died, paused or lost the database; renewed every `leaseMs / 3`. At least 30. */
  leaseMs?: number
  /** Longest wait in ms between two tries to take a held lock (default 50). At least 1. */
  lockPollMs?: number
  /** Take a lock at once when its holder's database session is gone (the holder process died) instead of after `leaseMs` (default `true`); `false` behind PgBouncer in transaction mode. See `postgresLockStore`. */
  detectDeadHolders?: boolean
  /** ms a from-start join of a run with nothing stored waits for its first chunk before throwing (default 100, as `memoryStream`). */
  firstChunkDeadlineMs?: number
  /** ms a tailing reader waits for a NOTIFY before re-querying anyway (default 2000): only the backstop for a lost notification. At least 100. */
  recheckMs?: number
  /** ms the server lets a transaction of the stores sit idle before ending its session (default 5000): bounds how long a paused process holding row locks keeps others waiting. At least 100. */
  transactionIdleTimeoutMs?: number
}

/** What {@link createPostgresStores} returns. */
export interface PostgresStores {
  /** The `RunStore`, with `listByThread`, `listReclaimable` and the engine-enforced `updateAtEpoch`. */
  readonly runs: PostgresRunStore
  /** The leased `LockStore` (`@tanstack/ai/locks`). */
  readonly locks: LockStore & LockProbe
  /** The `SandboxInstanceStore` (`@tanstack/ai-sandbox`). */
  readonly instances: SandboxInstanceStore
  /**
   * Portable-snapshot persistence (`SandboxSnapshotPersistence`): transcripts,
   * artifacts, blobs and the checkpoint chain with its lease and fork, in the
   * same schema. Hand it to both `withPersistence` and `createSandboxSnapshots`;
   * see `postgresSnapshotPersistence`.
   */
  readonly snapshots: SandboxSnapshotPersistence
  /**
   * The event log of one run, like core's `memoryStream(source)`: pass the
   * incoming Request (run id from `X-Run-Id` / `?runId`, offset from
   * `Last-Event-ID` / `?offset`) or `{ runId, offset? }`. Has `atEpoch` (the
   * engine-enforced fence) and `upsert`.
   * @throws PostgresStreamError `invalid-run-id`.
   */
  stream(source: Request | PostgresStreamInit): PostgresStream
  /** The pool, for your own queries (the tables are this package's: read, do not write). */
  readonly pool: PostgresPool
  /** The schema the tables live in. */
  readonly schema: string
  /** What the start-up migration did (`null` when created with `migrate: false`). */
  readonly migration: MigrationResult | null
  /** Close the stores: later calls throw `PostgresDatabaseError` `closed`, readers end, a lock still held is lost (its signal aborts) and its key handed back at once, and a pool opened from `connectionString` is ended. Idempotent. */
  close(): Promise<void>
}

const ms = (what: string, min: number) => z.number().int(`expected an integer number of milliseconds (${what})`).min(min, `expected at least ${min} ms`)

const optionsSchema = z
  .object({
    connectionString: z
      .string({ error: 'expected a PostgreSQL URL as a string, e.g. "postgres://user@127.0.0.1:5432/app"' })
      .regex(/^postgres(ql)?:\/\//, 'expected a PostgreSQL URL starting with postgres:// or postgresql://, e.g. "postgres://user@127.0.0.1:5432/app"')
      .optional(),
    pool: z.custom<PostgresPool>((v) => v instanceof pg.Pool || (typeof v === 'object' && v !== null && typeof (v as PostgresPool).connect === 'function' && typeof (v as PostgresPool).query === 'function'), {
      message: 'expected a node-postgres Pool (new pg.Pool({ connectionString }))',
    }).optional(),
    maxConnections: z.number().int('expected an integer number of connections').min(3, 'expected at least 3 connections: a held lock and the tails each keep one checked out, and queries need one more').max(1000, 'expected at most 1000 connections').optional(),
    schema: schemaName.optional(),
    migrate: z.boolean({ error: 'expected true or false' }).optional(),
    leaseMs: leaseMsSchema.optional(),
    lockPollMs: lockPollMsSchema.optional(),
    detectDeadHolders: detectDeadHoldersSchema.optional(),
    firstChunkDeadlineMs: firstChunkDeadlineMsSchema.optional(),
    recheckMs: recheckMsSchema.optional(),
    transactionIdleTimeoutMs: ms('the idle-in-transaction timeout', 100).max(3_600_000, 'expected at most 3 600 000 ms').optional(),
  })
  .strict()
  .superRefine((value, issue) => {
    if ((value.connectionString === undefined) === (value.pool === undefined)) {
      issue.addIssue({ code: 'custom', path: value.pool === undefined ? ['connectionString'] : ['pool'], message: 'expected exactly one of connectionString and pool' })
    }
    if (value.pool !== undefined && value.maxConnections !== undefined) {
      issue.addIssue({ code: 'custom', path: ['maxConnections'], message: 'applies only to the pool opened from connectionString; size your own pool with its max option' })
    }
  })

/**
 * Open (or take) a pool on one PostgreSQL database, migrate its schema, and
 * return the stores a durable `withSandbox` needs, shared by every process
 * and host that reaches the database: a lock lease judged by the database's
 * clock makes `withLock` exclusive across them, `updateAtEpoch` and
 * `stream(…).atEpoch` let the database itself refuse a superseded driver's
 * writes, and readers in any process are woken by LISTEN/NOTIFY. `snapshots`
 * is the portable-snapshot persistence in the same schema.
 *
 * @example
 * ```ts
 * const stores = await createPostgresStores({ connectionString: process.env.DATABASE_URL! })
 * withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability: { adapter: stores.stream(request) } })
 * const snapshots = createSandboxSnapshots({ persistence: stores.snapshots, sandbox, instances: stores.instances })
 * ```
 *
 * @param options - `connectionString` or `pool` (one is required), `maxConnections` (10), `schema` (`tanstack_sandbox`), `migrate` (`true`), `leaseMs` (10 000), `lockPollMs` (50), `detectDeadHolders` (true), `firstChunkDeadlineMs` (100), `recheckMs` (2000), `transactionIdleTimeoutMs` (5000).
 * @returns The stores, once the schema is migrated.
 * @throws SandboxConfigError naming the option (e.g. `createPostgresStores.leaseMs`) when one is invalid.
 * @throws PostgresDatabaseError `connect-failed` when the database cannot be reached, `schema-too-new` when a newer version of this package migrated the schema, `schema-missing` (with `migrate: false`) when the tables are not there. A pool opened here is ended before throwing.
 */
export async function createPostgresStores(options: PostgresStoresOptions): Promise<PostgresStores> {
  const parsed = parseOptions(optionsSchema, options, 'createPostgresStores')
  const owned = parsed.pool === undefined
  const pool: PostgresPool = parsed.pool ?? new pg.Pool({ connectionString: parsed.connectionString, max: parsed.maxConnections ?? 10 })
  // An idle pooled connection dropped by the server emits 'error' on the pool; without a listener that would crash the process.
  if (owned) pool.on('error', () => undefined)
  let closed = false
  let closing: Promise<void> | undefined
  const ctx = contextOf(pool, parsed.schema ?? DEFAULT_SCHEMA, 'createPostgresStores', { isClosed: () => closed, transactionIdleTimeoutMs: parsed.transactionIdleTimeoutMs })
  let migration: MigrationResult | null = null
  try {
    if (parsed.migrate !== false) migration = await migratePostgres(pool, { schema: ctx.tables.schema })
    else await pool.query(`SELECT 1 FROM ${ctx.tables.migrations} LIMIT 1`).catch((cause: unknown) => Promise.reject(databaseError(ctx, cause)))
  } catch (error) {
    if (owned) await pool.end().catch(() => undefined)
    throw error
  }
  const locks = lockStoreOf(ctx, { leaseMs: parsed.leaseMs, lockPollMs: parsed.lockPollMs, detectDeadHolders: parsed.detectDeadHolders })
  const streamOptions = { firstChunkDeadlineMs: parsed.firstChunkDeadlineMs, recheckMs: parsed.recheckMs }
  return {
    pool,
    schema: ctx.tables.schema,
    migration,
    runs: runStoreOf(ctx),
    locks: locks.store,
    instances: instanceStoreOf(ctx),
    snapshots: snapshotPersistenceOf(ctx),
    stream: (source) => streamOf(ctx, source, streamOptions),
    close() {
      closing ??= (async () => {
        // Before the stores count as closed: the held keys are handed back through the pool.
        await locks.close()
        closed = true
        // Readers waiting for a notification see the close at once; a pool of our own also loses its LISTEN connection, so end() does not wait for it.
        if (owned) notifierOf(ctx).shutdown()
        else notifierOf(ctx).wakeAll(ctx.tables.channel)
        if (owned) await pool.end().catch(() => undefined)
      })()
      return closing
    },
  }
}
