/**
 * The `SandboxInstanceStore` over the `instances` table: the seven fields of
 * spec 003's `SandboxInstanceRecord`, one row per compound key, `upsert` a
 * full replace.
 */
import type { SandboxInstanceRecord, SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { assertOpen, type SqliteDatabase } from './database.js'

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
 * The `SandboxInstanceStore` of `createSqliteStores`: `get` returns a fresh
 * record (or `null`), `upsert` replaces the whole row, so an optional field
 * left out (`latestSnapshotId`, `latestRunId`) is cleared, and `delete` of a
 * missing key is a no-op. Fields outside spec 003's seven are not stored.
 *
 * @param db - An open database from `openSqliteDatabase`.
 * @throws SqliteDatabaseError `closed` after the database was closed.
 */
export function sqliteInstanceStore(db: SqliteDatabase): SandboxInstanceStore {
  const select = db.prepare<[string], InstanceRow>('SELECT * FROM instances WHERE key = ?')
  const replace = db.prepare<[string, string, string, string | null, string, string | null, number]>(
    'INSERT OR REPLACE INTO instances (key, provider, provider_sandbox_id, latest_snapshot_id, thread_id, latest_run_id, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  )
  const remove = db.prepare<[string]>('DELETE FROM instances WHERE key = ?')
  return {
    async get(key) {
      assertOpen(db)
      const row = select.get(key)
      if (row === undefined) return null
      const record: SandboxInstanceRecord = { key: row.key, provider: row.provider, providerSandboxId: row.provider_sandbox_id, threadId: row.thread_id, updatedAt: row.updated_at }
      if (row.latest_snapshot_id !== null) record.latestSnapshotId = row.latest_snapshot_id
      if (row.latest_run_id !== null) record.latestRunId = row.latest_run_id
      return record
    },
    async upsert(record) {
      assertOpen(db)
      replace.run(record.key, record.provider, record.providerSandboxId, record.latestSnapshotId ?? null, record.threadId, record.latestRunId ?? null, record.updatedAt)
    },
    async delete(key) {
      assertOpen(db)
      remove.run(key)
    },
  }
}
