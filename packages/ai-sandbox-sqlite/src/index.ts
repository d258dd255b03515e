/**
 * `@tanstack/ai-sandbox-sqlite`: the embedded stores of a durable
 * `withSandbox` for one host. `createSqliteStores` gives runs, leased locks,
 * sandbox instances, a run event log and portable-snapshot persistence over
 * one SQLite file that several processes share; the factories below are the
 * same stores over a connection you opened with `openSqliteDatabase`.
 */
export { createSqliteStores } from './stores.js'
export type { SqliteStores, SqliteStoresOptions } from './stores.js'
export { openSqliteDatabase, SCHEMA_VERSION, DEFAULT_BUSY_TIMEOUT_MS } from './database.js'
export type { SqliteDatabase, OpenSqliteDatabaseOptions } from './database.js'
export { sqliteRunStore } from './run-store.js'
export type { SqliteRunStore } from './run-store.js'
export { sqliteLockStore, DEFAULT_LEASE_MS, DEFAULT_LOCK_POLL_MS } from './lock-store.js'
export type { SqliteLockStoreOptions } from './lock-store.js'
export { sqliteInstanceStore } from './instance-store.js'
export { sqliteSnapshotPersistence } from './snapshot-stores.js'
export { sqliteStream, DEFAULT_STREAM_POLL_MS, DEFAULT_FIRST_CHUNK_DEADLINE_MS } from './stream.js'
export type { SqliteStreamInit, SqliteStreamOptions } from './stream.js'
export { SqliteDatabaseError, SqliteStreamError, SqliteLockLostError } from './errors.js'
export type { SqliteDatabaseErrorReason, SqliteStreamErrorReason, SqliteLockLostReason } from './errors.js'
