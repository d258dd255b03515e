/**
 * `createSqliteStores`: the four stores of a durable `withSandbox` (runs,
 * locks, sandbox instances, the event log) and the portable-snapshot
 * persistence over one database file that every process on the host opens. Owns the option schema and the connection's
 * lifetime; the stores own their tables.
 */
import type { UpsertableStreamDurability } from '@tanstack/ai'
import type { LockStore } from '@tanstack/ai/locks'
import { parseOptions, type EpochFencedStreamDurability, type LockProbe, type SandboxInstanceStore, type SandboxSnapshotPersistence } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { DEFAULT_BUSY_TIMEOUT_MS, openSqliteDatabase, type SqliteDatabase } from './database.js'
import { sqliteInstanceStore } from './instance-store.js'
import { DEFAULT_LEASE_MS, releaseHeldLocks, sqliteLockStore } from './lock-store.js'
import { sqliteRunStore, type SqliteRunStore } from './run-store.js'
import { sqliteSnapshotPersistence } from './snapshot-stores.js'
import { DEFAULT_FIRST_CHUNK_DEADLINE_MS, DEFAULT_STREAM_POLL_MS, sqliteStream, type SqliteStreamInit } from './stream.js'

/** Options of {@link createSqliteStores}. */
export interface SqliteStoresOptions {
  /** The database file every process shares (created with its schema if missing; its directory must exist). `:memory:` gives stores private to this call. */
  path: string
  /** Lock lease in ms (default 10 000): how long a key stays held by a process that died or paused; renewed every `leaseMs / 3`. At least 30. */
  leaseMs?: number
  /** Take a lock at once when its holder process on this machine is gone (SIGKILL, OOM, a crash) instead of after `leaseMs` (default `true`); see `sqliteLockStore`. */
  detectDeadHolders?: boolean
  /** ms between two looks at the file while a stream `read` tails, also the longest wait between two tries to take a held lock (default 25). At least 1. */
  pollMs?: number
  /** ms a statement waits for another process's write lock before failing (SQLite `busy_timeout`, default 5000). */
  busyTimeoutMs?: number
  /** ms a from-start join of a run with nothing stored waits for its first chunk before throwing (default 100, as `memoryStream`). */
  firstChunkDeadlineMs?: number
}

/** What {@link createSqliteStores} returns. */
export interface SqliteStores {
  /** The `RunStore`, with `listByThread` and `listReclaimable`. */
  readonly runs: SqliteRunStore
  /** The leased `LockStore` (`@tanstack/ai/locks`). */
  readonly locks: LockStore & LockProbe
  /** The `SandboxInstanceStore` (`@tanstack/ai-sandbox`). */
  readonly instances: SandboxInstanceStore
  /**
   * Portable-snapshot persistence (`SandboxSnapshotPersistence`): transcripts,
   * artifacts, blobs and the checkpoint chain with its lease and fork, in the
   * same file. Hand it to both `withPersistence` and `createSandboxSnapshots`;
   * see `sqliteSnapshotPersistence`.
   */
  readonly snapshots: SandboxSnapshotPersistence
  /**
   * The event log of one run, like core's `memoryStream(source)`: pass the
   * incoming Request (run id from `X-Run-Id` / `?runId`, offset from
   * `Last-Event-ID` / `?offset`) or `{ runId, offset? }`. Its `atEpoch(epoch)`
   * is the engine-enforced fence (`EpochFencedStreamDurability`).
   * @throws SqliteStreamError `invalid-run-id`.
   */
  stream(source: Request | SqliteStreamInit): UpsertableStreamDurability & EpochFencedStreamDurability
  /** The open connection, for your own queries (the tables are this package's: read, do not write). */
  readonly db: SqliteDatabase
  /** Close the database handle. Later calls throw `SqliteDatabaseError` `closed`; a lock still held is lost (its signal aborts) and its key handed back at once. Idempotent. */
  close(): void
}

const ms = (what: string, min: number) => z.number().int(`expected an integer number of milliseconds (${what})`).min(min, `expected at least ${min} ms`)

const optionsSchema = z
  .object({
    path: z
      .string({ error: 'expected the database file path as a string, e.g. "./agent-runs.db"' })
      .min(1, 'expected a non-empty database file path, e.g. "./agent-runs.db"')
      .refine((value) => !value.includes('\0'), 'must not contain NUL bytes'),
    leaseMs: ms('the lock lease', 30).max(3_600_000, 'expected at most 3 600 000 ms (one hour)').optional(),
    pollMs: ms('the tail poll interval', 1).max(60_000, 'expected at most 60 000 ms').optional(),
    detectDeadHolders: z.boolean({ error: 'expected true or false (take a lock whose holder process is gone at once)' }).optional(),
    busyTimeoutMs: ms('the SQLite busy_timeout', 0).max(600_000, 'expected at most 600 000 ms').optional(),
    firstChunkDeadlineMs: ms('the first-chunk deadline', 0).optional(),
  })
  .strict()

/**
 * Open (or create) one SQLite database file and return the stores a durable
 * `withSandbox` needs, shared by every process on this host that opens the
 * same file: WAL mode lets readers run beside one writer, `busy_timeout`
 * queues the writers, and the lock lease makes `withLock` exclusive across
 * processes. `snapshots` is the portable-snapshot persistence in the same
 * file. Not for a network filesystem (WAL needs shared memory on one host).
 *
 * @example
 * ```ts
 * const stores = createSqliteStores({ path: './agent-runs.db' })
 * withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability: { adapter: stores.stream(request) } })
 * const snapshots = createSandboxSnapshots({ persistence: stores.snapshots, sandbox, instances: stores.instances })
 * ```
 *
 * @param options - `path` (required), `leaseMs` (10 000), `detectDeadHolders` (true), `pollMs` (25), `busyTimeoutMs` (5000), `firstChunkDeadlineMs` (100).
 * @throws SandboxConfigError naming the option (e.g. `createSqliteStores.leaseMs`) when one is invalid.
 * @throws SqliteDatabaseError `open-failed` or `schema-too-new` when the file cannot be used.
 */
export function createSqliteStores(options: SqliteStoresOptions): SqliteStores {
  const parsed = parseOptions(optionsSchema, options, 'createSqliteStores')
  const db = openSqliteDatabase(parsed.path, { busyTimeoutMs: parsed.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS })
  const pollMs = parsed.pollMs ?? DEFAULT_STREAM_POLL_MS
  const streamOptions = { pollMs, firstChunkDeadlineMs: parsed.firstChunkDeadlineMs ?? DEFAULT_FIRST_CHUNK_DEADLINE_MS }
  return {
    db,
    runs: sqliteRunStore(db),
    locks: sqliteLockStore(db, { leaseMs: parsed.leaseMs ?? DEFAULT_LEASE_MS, pollMs, detectDeadHolders: parsed.detectDeadHolders ?? true }),
    instances: sqliteInstanceStore(db),
    snapshots: sqliteSnapshotPersistence(db),
    stream: (source) => sqliteStream(db, source, streamOptions),
    close: () => {
      releaseHeldLocks(db)
      if (db.open) db.close()
    },
  }
}
