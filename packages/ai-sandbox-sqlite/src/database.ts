/**
 * Opening the database file and its schema migrations. Owns the connection
 * settings every store relies on (WAL, `busy_timeout`) and the schema version
 * in `PRAGMA user_version`; the stores own their queries.
 */
import Database from 'better-sqlite3'
import { SqliteDatabaseError } from './errors.js'

/** A better-sqlite3 connection, as the store factories take it. */
export type SqliteDatabase = Database.Database

/** How long, in ms, a statement waits for another process's write lock before failing with `SQLITE_BUSY`. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/**
 * The schema, one entry per version: entry `i` migrates version `i` to `i + 1`.
 * Append new versions; never edit a shipped one.
 */
const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE runs (
    run_id TEXT NOT NULL PRIMARY KEY,
    thread_id TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    error TEXT,
    usage TEXT,
    sandbox_key TEXT,
    detached_since INTEGER,
    cancel_requested INTEGER,
    driver_epoch INTEGER
  );
  CREATE INDEX runs_by_thread ON runs (thread_id, started_at);
  CREATE INDEX runs_detached ON runs (detached_since) WHERE status = 'running' AND detached_since IS NOT NULL;
  CREATE TABLE locks (
    key TEXT NOT NULL PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE instances (
    key TEXT NOT NULL PRIMARY KEY,
    provider TEXT NOT NULL,
    provider_sandbox_id TEXT NOT NULL,
    latest_snapshot_id TEXT,
    thread_id TEXT NOT NULL,
    latest_run_id TEXT,
    updated_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  CREATE TABLE stream_logs (
    run_id TEXT NOT NULL PRIMARY KEY,
    closed_at INTEGER
  ) WITHOUT ROWID;
  CREATE TABLE stream_chunks (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    chunk TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
  ) WITHOUT ROWID;
  `,
  // 2: portable snapshots (snapshot-stores.ts). Blobs keep a rowid (large values) and put their small columns first,
  // so reading a count or a put time never walks a large value's overflow pages; checkpoint_refs counts the
  // checkpoints naming a blob, current artifacts are counted from snapshot_artifacts; put_at is the epoch ms
  // (Date.now()) of the blob's last put, the age listUnreferenced and delete compare with olderThanMs. A lease row
  // outlives its release (owner, token and expires_at NULL) so the thread's fence only grows.
  `
  CREATE TABLE snapshot_messages (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
  ) WITHOUT ROWID;
  CREATE TABLE snapshot_blobs (
    sha256 TEXT NOT NULL PRIMARY KEY,
    checkpoint_refs INTEGER NOT NULL DEFAULT 0,
    put_at INTEGER NOT NULL DEFAULT 0,
    bytes BLOB NOT NULL
  );
  CREATE TABLE snapshot_artifacts (
    thread_id TEXT NOT NULL,
    name TEXT NOT NULL,
    media_type TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, name)
  ) WITHOUT ROWID;
  CREATE INDEX snapshot_artifacts_by_blob ON snapshot_artifacts (sha256);
  CREATE TABLE snapshot_checkpoints (
    thread_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    checkpoint_id TEXT NOT NULL UNIQUE,
    parent_checkpoint_id TEXT,
    kind TEXT NOT NULL,
    run_id TEXT,
    label TEXT,
    manifest TEXT NOT NULL,
    manifest_sha256 TEXT NOT NULL,
    message_count INTEGER NOT NULL,
    artifacts TEXT NOT NULL,
    forked_from_thread_id TEXT,
    forked_from_checkpoint_id TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, sequence)
  );
  CREATE TABLE snapshot_leases (
    thread_id TEXT NOT NULL PRIMARY KEY,
    fence INTEGER NOT NULL,
    owner TEXT,
    token TEXT,
    expires_at INTEGER
  ) WITHOUT ROWID;
  `,
]

/** The schema version this package writes (`PRAGMA user_version` after migrating). */
export const SCHEMA_VERSION = MIGRATIONS.length

/** Options of {@link openSqliteDatabase}. */
export interface OpenSqliteDatabaseOptions {
  /** ms a statement waits for another process's write lock (SQLite `busy_timeout`). Default {@link DEFAULT_BUSY_TIMEOUT_MS}. */
  busyTimeoutMs?: number
}

/**
 * Open (creating it if missing) the database file the stores share, switch it
 * to WAL with `synchronous = NORMAL` (a committed write survives a crash of
 * the process; only a power loss can drop the last commits), set
 * `busy_timeout`, and migrate the schema to {@link SCHEMA_VERSION} inside one
 * `BEGIN IMMEDIATE` transaction, so processes opening the file at once
 * migrate it exactly once.
 *
 * @param path - The database file; its directory must exist. `:memory:` gives a private database (one connection only, no sharing).
 * @returns The open connection; close it with `db.close()`.
 * @throws SqliteDatabaseError `open-failed` when the file cannot be opened or is not a SQLite database, `schema-too-new` when a newer version of this package migrated it.
 */
export function openSqliteDatabase(path: string, options: OpenSqliteDatabaseOptions = {}): SqliteDatabase {
  let db: SqliteDatabase
  try {
    db = new Database(path, { timeout: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS })
  } catch (cause) {
    throw new SqliteDatabaseError('open-failed', path, `Cannot open the SQLite database ${JSON.stringify(path)}: ${messageOf(cause)}. Check that its directory exists and is writable.`, { cause })
  }
  try {
    enableWal(db, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS)
    db.pragma('synchronous = NORMAL')
    migrate(db, path)
    return db
  } catch (cause) {
    db.close()
    if (SqliteDatabaseError.isInstance(cause)) throw cause
    throw new SqliteDatabaseError('open-failed', path, `Cannot set up the SQLite database ${JSON.stringify(path)}: ${messageOf(cause)}. Check that it is a SQLite file this process may write.`, { cause })
  }
}

/** Blocks the thread for a few ms between two tries of the WAL switch (openSqliteDatabase is synchronous). */
const pause = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)

/**
 * Switch the file to WAL. SQLite switches a file's journal mode under an
 * exclusive lock and does not call the busy handler while it waits for it
 * (https://sqlite.org/pragma.html#pragma_journal_mode, and `busy_timeout`'s
 * own note on locks it cannot wait for), so of several processes opening a
 * new file at once, the ones that lose get SQLITE_BUSY at once. They try
 * again for up to `busyTimeoutMs`, 1 to 50 ms apart; WAL is kept in the file,
 * so once any process switched it the others find it switched.
 */
function enableWal(db: SqliteDatabase, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    try {
      db.pragma('journal_mode = WAL')
      return
    } catch (cause) {
      if (!String((cause as { code?: unknown }).code).startsWith('SQLITE_BUSY') || Date.now() >= deadline) throw cause
    }
    pause(wait)
  }
}

function migrate(db: SqliteDatabase, path: string): void {
  db.transaction(() => {
    const version = db.pragma('user_version', { simple: true }) as number
    if (version > SCHEMA_VERSION) {
      throw new SqliteDatabaseError(
        'schema-too-new',
        path,
        `The SQLite database ${JSON.stringify(path)} has schema version ${version}, newer than the ${SCHEMA_VERSION} this version of @tanstack/ai-sandbox-sqlite knows. Upgrade @tanstack/ai-sandbox-sqlite in every process that opens it.`,
      )
    }
    for (let next = version; next < SCHEMA_VERSION; next++) db.exec(MIGRATIONS[next]!)
    if (version !== SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`)
  }).immediate()
}

/**
 * Throw {@link SqliteDatabaseError} `closed` when `db` was closed, so a call
 * after `close()` fails with a typed error instead of better-sqlite3's TypeError.
 */
export function assertOpen(db: SqliteDatabase): void {
  if (!db.open) throw new SqliteDatabaseError('closed', db.name, `The SQLite stores on ${JSON.stringify(db.name)} are closed. Create new stores with createSqliteStores() to keep using the database.`)
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
