/**
 * `@tanstack/ai-sandbox-postgres`: the stores of a durable `withSandbox` for
 * several replicas. `createPostgresStores` gives runs, leased locks, sandbox
 * instances, a run event log and portable-snapshot persistence over one
 * PostgreSQL database, with the engine-enforced epoch fence (`updateAtEpoch`,
 * `atEpoch`); the factories below are the same stores over a `pg.Pool` you
 * opened, after `migratePostgres`.
 */
export { createPostgresStores } from './stores.js'
export type { PostgresStores, PostgresStoresOptions } from './stores.js'
export { migratePostgres, SCHEMA_VERSION, DEFAULT_SCHEMA, DEFAULT_TRANSACTION_IDLE_TIMEOUT_MS } from './database.js'
export type { MigrationResult, PostgresPool, PostgresSchemaOptions } from './database.js'
export { postgresRunStore } from './run-store.js'
export type { PostgresRunStore } from './run-store.js'
export { postgresLockStore, DEFAULT_LEASE_MS, DEFAULT_LOCK_POLL_MS } from './lock-store.js'
export type { PostgresLockStoreOptions } from './lock-store.js'
export { postgresInstanceStore } from './instance-store.js'
export { postgresSnapshotPersistence } from './snapshot-stores.js'
export { postgresStream, DEFAULT_FIRST_CHUNK_DEADLINE_MS, DEFAULT_RECHECK_MS, READ_PAGE_SIZE } from './stream.js'
export type { PostgresStream, PostgresStreamInit, PostgresStreamOptions } from './stream.js'
export { PostgresDatabaseError, PostgresStreamError, PostgresLockLostError } from './errors.js'
export type { PostgresDatabaseErrorReason, PostgresStreamErrorReason, PostgresLockLostReason } from './errors.js'
