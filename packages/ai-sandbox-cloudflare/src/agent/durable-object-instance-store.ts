/**
 * `durableObjectInstanceStore`: core's `SandboxInstanceStore` (spec 003's
 * seven fields) in a Durable Object's SQLite storage, so a coordinator
 * restarted by the platform resumes the sandbox its run was using instead of
 * provisioning a new one. One table, made on first use.
 */
import type { SandboxInstanceRecord, SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { checkedSqlStorage, type DurableObjectSqlStorage } from './durable-object-run-event-log.js'

/**
 * The sandbox instance store over `ctx.storage` of a SQLite-backed Durable
 * Object: `get`, `upsert` (a full replace: optional fields left out are
 * cleared) and `delete`, as `runSandboxInstanceStoreConformance` checks.
 *
 * @param storage - `ctx.storage` of the Durable Object.
 * @param options - `tablePrefix` (default `tsb_run`, the run log's; the table is `<prefix>_instances`).
 * @returns A `SandboxInstanceStore` for `withSandbox(sandbox, { instances })`.
 * @throws TypeError when `storage` is not a SQLite-backed Durable Object's, or `tablePrefix` is not a plain name.
 * @example
 * ```ts
 * const instances = durableObjectInstanceStore(this.ctx.storage)
 * ```
 */
export function durableObjectInstanceStore(storage: DurableObjectSqlStorage, options: { tablePrefix?: string } = {}): SandboxInstanceStore {
  const sql = checkedSqlStorage(storage, options.tablePrefix ?? 'tsb_run', 'durableObjectInstanceStore').sql
  const table = `${options.tablePrefix ?? 'tsb_run'}_instances`
  sql.exec(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT PRIMARY KEY, provider TEXT NOT NULL, provider_sandbox_id TEXT NOT NULL, latest_snapshot_id TEXT, thread_id TEXT NOT NULL, latest_run_id TEXT, updated_at INTEGER NOT NULL)`)
  return {
    get: async (key) => {
      const row = sql.exec(`SELECT * FROM ${table} WHERE key = ?`, key).toArray()[0]
      if (row === undefined) return null
      const record: SandboxInstanceRecord = { key: String(row.key), provider: String(row.provider), providerSandboxId: String(row.provider_sandbox_id), threadId: String(row.thread_id), updatedAt: Number(row.updated_at) }
      if (row.latest_snapshot_id !== null) record.latestSnapshotId = String(row.latest_snapshot_id)
      if (row.latest_run_id !== null) record.latestRunId = String(row.latest_run_id)
      return record
    },
    upsert: async (record) => {
      sql.exec(
        `INSERT OR REPLACE INTO ${table} (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        record.key,
        record.provider,
        record.providerSandboxId,
        record.latestSnapshotId ?? null,
        record.threadId,
        record.latestRunId ?? null,
        record.updatedAt,
      )
    },
    delete: async (key) => {
      sql.exec(`DELETE FROM ${table} WHERE key = ?`, key)
    },
  }
}
