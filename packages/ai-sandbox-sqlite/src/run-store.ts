/**
 * The `RunStore` over the `runs` table: every method core declares, with the
 * key-presence patch rule and the orderings of core's `InMemoryRunStore`.
 * `error` and `usage` are JSON columns; a row whose status is not a
 * `RunStatus` is refused (core's `isRunStatus`), never handed on.
 */
import { isRunStatus, type RunRecord, type RunStatus, type RunStore } from '@tanstack/ai'
import { assertValidRunId, SandboxConfigError, type EpochFencedRunStore, type EndedRunLister, type UndetachedRunLister } from '@tanstack/ai-sandbox'
import type { Statement } from 'better-sqlite3'
import { assertOpen, type SqliteDatabase } from './database.js'
import { SqliteDatabaseError } from './errors.js'

/** The patch `RunStore.update` takes. */
type RunPatch = Parameters<RunStore['update']>[1]

interface RunRow {
  run_id: string
  thread_id: string
  status: string
  started_at: number
  finished_at: number | null
  error: string | null
  usage: string | null
  sandbox_key: string | null
  detached_since: number | null
  cancel_requested: number | null
  driver_epoch: number | null
}

/** Each patchable field, its column, and how its value is stored. */
const PATCH_COLUMNS: ReadonlyArray<readonly [keyof RunPatch, string, (value: unknown) => unknown]> = [
  ['status', 'status', (v) => v],
  ['finishedAt', 'finished_at', (v) => v],
  ['error', 'error', (v) => JSON.stringify(v)],
  ['usage', 'usage', (v) => JSON.stringify(v)],
  ['sandboxKey', 'sandbox_key', (v) => v],
  ['detachedSince', 'detached_since', (v) => v],
  ['cancelRequested', 'cancel_requested', (v) => (v ? 1 : 0)],
  ['driverEpoch', 'driver_epoch', (v) => v],
]

/** A `RunStore` with the optional methods present, the engine-enforced epoch fence (`updateAtEpoch`) the orphan listing (`listUndetachedRuns`) and the ended-run listing (`listEndedRuns`). */
export type SqliteRunStore = Required<RunStore> & EpochFencedRunStore & UndetachedRunLister & EndedRunLister

/**
 * The `RunStore` of `createSqliteStores`, over an open database (see
 * `openSqliteDatabase`). Several processes may share the file: every call is
 * one statement or one transaction.
 *
 * - `createOrResume` inserts, or returns the stored record unchanged.
 * - `update` applies only the keys present in the patch: an omitted key is
 *   untouched, a key set to `undefined` clears the field (except `status`,
 *   which a record always has: `status: undefined` leaves it). An unknown run is a no-op.
 * - `findActiveRun` returns the `'running'` run of the thread with the greatest
 *   `startedAt` (the first stored wins a tie), `listByThread` is ascending by
 *   `startedAt`, `listReclaimable` has an inclusive cutoff (`detachedSince <= now - ttlMs`).
 * - `listUndetachedRuns({ startedBefore, limit })` lists the `'running'` runs
 *   never detached that started at or before `startedBefore`, oldest first
 *   (where `reapDetachedRuns` looks for orphans).
 * - `listEndedRuns({ finishedAfter, finishedBefore, limit })` lists the
 *   terminal runs with a `sandboxKey` whose `finishedAt` is in the window
 *   (both ends inclusive), newest first (where `reapDetachedRuns` looks for
 *   sandboxes ended runs left behind, with `endedRunGraceMs`).
 *
 * @param db - An open database from `openSqliteDatabase`.
 * @throws InvalidRunIdError `invalid-run-id` (a rejection) for a run id that breaks `assertValidRunId`'s rule, before anything is written.
 * @throws SqliteDatabaseError `closed` after the database was closed, `corrupt-row` for a row with an unknown status.
 */
export function sqliteRunStore(db: SqliteDatabase): SqliteRunStore {
  const insert = db.prepare<[string, string, string, number]>('INSERT INTO runs (run_id, thread_id, status, started_at) VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING')
  const byId = db.prepare<[string], RunRow>('SELECT * FROM runs WHERE run_id = ?')
  const byThread = db.prepare<[string], RunRow>('SELECT * FROM runs WHERE thread_id = ? ORDER BY started_at ASC, rowid ASC')
  const active = db.prepare<[string], RunRow>("SELECT * FROM runs WHERE thread_id = ? AND status = 'running' ORDER BY started_at DESC, rowid ASC LIMIT 1")
  const reclaimable = db.prepare<[number], RunRow>("SELECT * FROM runs WHERE status = 'running' AND detached_since IS NOT NULL AND detached_since <= ? ORDER BY rowid ASC")
  const ended = db.prepare<[number, number, number], RunRow>(
    "SELECT * FROM runs WHERE status IN ('completed', 'failed', 'aborted') AND sandbox_key IS NOT NULL AND finished_at BETWEEN ? AND ? ORDER BY finished_at DESC, rowid DESC LIMIT ?",
  )
  const undetached = db.prepare<[number, number], RunRow>("SELECT * FROM runs WHERE status = 'running' AND detached_since IS NULL AND started_at <= ? ORDER BY started_at ASC, rowid ASC LIMIT ?")
  // One prepared UPDATE per set of patched columns (at most 2^8 shapes).
  const updates = new Map<string, Statement<unknown[]>>()
  const fenceHolds = db.prepare<[string, number | null], { one: number }>('SELECT 1 AS one FROM runs WHERE run_id = ? AND driver_epoch IS ?')
  /** One UPDATE of the patched columns, conditional on the epoch when `fence` is given; true when a row changed. */
  const patchRun = (runId: string, patch: RunPatch, fence: { epoch: number | undefined } | undefined): boolean => {
    const sets: string[] = []
    const values: unknown[] = []
    for (const [field, column, encode] of PATCH_COLUMNS) {
      if (!Object.hasOwn(patch, field)) continue
      const value = patch[field]
      // `status` is required on a record, so an explicit undefined leaves it as it is.
      if (field === 'status' && value === undefined) continue
      // A status no reader accepts is refused here, rather than stored and then refused by every `get` as corrupt.
      if (field === 'status' && !isRunStatus(value)) throw new SandboxConfigError('update.status', `RunStore.update: status ${JSON.stringify(value)} is not a RunStatus; use 'running', 'completed', 'failed', 'aborted' or another status core's isRunStatus accepts.`)
      sets.push(`${column} = ?`)
      values.push(value === undefined ? null : encode(value))
    }
    if (sets.length === 0) return false
    const sql = `UPDATE runs SET ${sets.join(', ')} WHERE run_id = ?${fence ? ' AND driver_epoch IS ?' : ''}`
    let statement = updates.get(sql)
    if (statement === undefined) updates.set(sql, (statement = db.prepare<unknown[]>(sql)))
    return statement.run(...values, runId, ...(fence ? [fence.epoch ?? null] : [])).changes === 1
  }
  const createOrResume = db.transaction((input: { runId: string; threadId: string; startedAt: number; status: RunStatus }) => {
    insert.run(input.runId, input.threadId, input.status, input.startedAt)
    return byId.get(input.runId)!
  })

  return {
    async createOrResume(input) {
      assertValidRunId(input.runId, 'RunStore.createOrResume({ runId })')
      assertOpen(db)
      return toRecord(db, createOrResume.immediate({ runId: input.runId, threadId: input.threadId, startedAt: input.startedAt, status: input.status ?? 'running' }))
    },
    async update(runId, patch) {
      assertValidRunId(runId, 'RunStore.update(runId)')
      assertOpen(db)
      patchRun(runId, patch, undefined)
    },
    async updateAtEpoch(runId, epoch, patch) {
      assertValidRunId(runId, 'RunStore.updateAtEpoch(runId)')
      assertOpen(db)
      // An empty patch still answers whether the epoch holds.
      return patchRun(runId, patch, { epoch }) || (Object.keys(patch).length === 0 && fenceHolds.get(runId, epoch ?? null) !== undefined)
    },
    async get(runId) {
      assertValidRunId(runId, 'RunStore.get(runId)')
      assertOpen(db)
      const row = byId.get(runId)
      return row === undefined ? null : toRecord(db, row)
    },
    async listByThread(threadId) {
      assertOpen(db)
      return byThread.all(threadId).map((row) => toRecord(db, row))
    },
    async listReclaimable({ now, ttlMs }) {
      assertOpen(db)
      return reclaimable.all(now - ttlMs).map((row) => toRecord(db, row))
    },
    async listUndetachedRuns({ startedBefore, limit }) {
      assertOpen(db)
      return undetached.all(startedBefore, Math.max(0, Math.floor(limit))).map((row) => toRecord(db, row))
    },
    async listEndedRuns({ finishedAfter, finishedBefore, limit }) {
      assertOpen(db)
      return ended.all(finishedAfter, finishedBefore, Math.max(0, Math.floor(limit))).map((row) => toRecord(db, row))
    },
    async findActiveRun(threadId) {
      assertOpen(db)
      const row = active.get(threadId)
      return row === undefined ? null : toRecord(db, row)
    },
  }
}

function toRecord(db: SqliteDatabase, row: RunRow): RunRecord {
  if (!isRunStatus(row.status)) {
    throw new SqliteDatabaseError('corrupt-row', db.name, `Run ${JSON.stringify(row.run_id)} has status ${JSON.stringify(row.status)} in the runs table, which is not a RunStatus. Fix or delete the row.`)
  }
  const record: RunRecord = { runId: row.run_id, threadId: row.thread_id, status: row.status, startedAt: row.started_at }
  if (row.finished_at !== null) record.finishedAt = row.finished_at
  if (row.error !== null) record.error = JSON.parse(row.error) as RunRecord['error']
  if (row.usage !== null) record.usage = JSON.parse(row.usage) as RunRecord['usage']
  if (row.sandbox_key !== null) record.sandboxKey = row.sandbox_key
  if (row.detached_since !== null) record.detachedSince = row.detached_since
  if (row.cancel_requested !== null) record.cancelRequested = row.cancel_requested === 1
  if (row.driver_epoch !== null) record.driverEpoch = row.driver_epoch
  return record
}
