/**
 * The `SandboxInstanceStore` over the `instances` table: the seven fields of
 * spec 003's `SandboxInstanceRecord`, one row per compound key, `upsert` a
 * full replace in one statement.
 */
import type { SandboxInstanceRecord, SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { contextOf, query, type PostgresContext, type PostgresPool, type PostgresSchemaOptions } from './database.js'

interface InstanceRow {
  key: string
  provider: string
  provider_sandbox_id: string
  latest_snapshot_id: string | null
  thread_id: string
  latest_run_id: string | null
  updated_at: number
}

/**
 * The `SandboxInstanceStore` of `createPostgresStores`: `get` returns a fresh
 * record (or `null`), `upsert` replaces the whole row (`INSERT … ON CONFLICT
 * DO UPDATE` of every column), so an optional field left out
 * (`latestSnapshotId`, `latestRunId`) is cleared, and `delete` of a missing
 * key is a no-op. Fields outside spec 003's seven are not stored.
 *
 * @param pool - A node-postgres `Pool` whose schema was migrated (`migratePostgres`).
 * @param options - `schema` (default `tanstack_sandbox`).
 * @throws SandboxConfigError naming `postgresInstanceStore.schema` for an invalid schema name.
 * @throws PostgresDatabaseError from any call: `closed`, `schema-missing`, `connect-failed`, `query-failed`.
 * @example
 * ```ts
 * const instances = postgresInstanceStore(pool)
 * const record = await instances.get('repo-agent:thread-1')
 * ```
 */
export function postgresInstanceStore(pool: PostgresPool, options: PostgresSchemaOptions = {}): SandboxInstanceStore {
  return instanceStoreOf(contextOf(pool, options.schema, 'postgresInstanceStore'))
}

/** The instance store over a context. Internal. */
export function instanceStoreOf(ctx: PostgresContext): SandboxInstanceStore {
  const t = ctx.tables
  return {
    async get(key) {
      const { rows } = await query<InstanceRow>(ctx, `SELECT * FROM ${t.instances} WHERE key = $1`, [key])
      const row = rows[0]
      if (row === undefined) return null
      const record: SandboxInstanceRecord = { key: row.key, provider: row.provider, providerSandboxId: row.provider_sandbox_id, threadId: row.thread_id, updatedAt: row.updated_at }
      if (row.latest_snapshot_id !== null) record.latestSnapshotId = row.latest_snapshot_id
      if (row.latest_run_id !== null) record.latestRunId = row.latest_run_id
      return record
    },
    async upsert(record) {
      await query(
        ctx,
        `INSERT INTO ${t.instances} (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (key) DO UPDATE SET provider = EXCLUDED.provider, provider_sandbox_id = EXCLUDED.provider_sandbox_id, latest_snapshot_id = EXCLUDED.latest_snapshot_id,
           thread_id = EXCLUDED.thread_id, latest_run_id = EXCLUDED.latest_run_id, updated_at = EXCLUDED.updated_at`,
        [record.key, record.provider, record.providerSandboxId, record.latestSnapshotId ?? null, record.threadId, record.latestRunId ?? null, record.updatedAt],
      )
    },
    async delete(key) {
      await query(ctx, `DELETE FROM ${t.instances} WHERE key = $1`, [key])
    },
  }
}
