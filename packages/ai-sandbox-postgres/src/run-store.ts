/**
 * The `RunStore` over the `runs` table: every method core declares, with the
 * key-presence patch rule and the orderings of core's `InMemoryRunStore`, and
 * the engine-enforced epoch fence (`updateAtEpoch`: one conditional UPDATE).
 * `error` and `usage` are `jsonb`; a row whose status is not a `RunStatus` is
 * refused (core's `isRunStatus`), never handed on.
 */
import { isRunStatus, type RunRecord, type RunStore } from '@tanstack/ai'
import { assertValidRunId, SandboxConfigError, type EpochFencedRunStore, type RunRecordPatch, type EndedRunLister, type UndetachedRunLister } from '@tanstack/ai-sandbox'
import { contextOf, query, type PostgresContext, type PostgresPool, type PostgresSchemaOptions } from './database.js'
import { PostgresDatabaseError } from './errors.js'

interface RunRow {
  run_id: string
  thread_id: string
  status: string
  started_at: number
  finished_at: number | null
  error: RunRecord['error'] | null
  usage: RunRecord['usage'] | null
  sandbox_key: string | null
  detached_since: number | null
  cancel_requested: boolean | null
  driver_epoch: string | null
}

/** Each patchable field, its column, and how its value is bound (`$n` or `$n::jsonb`). */
const PATCH_COLUMNS: ReadonlyArray<readonly [keyof RunRecordPatch, string, (value: unknown) => unknown, string]> = [
  ['status', 'status', (v) => v, ''],
  ['finishedAt', 'finished_at', (v) => v, '::float8'],
  ['error', 'error', (v) => JSON.stringify(v), '::jsonb'],
  ['usage', 'usage', (v) => JSON.stringify(v), '::jsonb'],
  ['sandboxKey', 'sandbox_key', (v) => v, ''],
  ['detachedSince', 'detached_since', (v) => v, '::float8'],
  ['cancelRequested', 'cancel_requested', (v) => Boolean(v), '::boolean'],
  ['driverEpoch', 'driver_epoch', (v) => v, '::bigint'],
]

/** A `RunStore` with the optional methods present, and the engine-enforced epoch fence. */
export type PostgresRunStore = Required<RunStore> & EpochFencedRunStore & UndetachedRunLister & EndedRunLister

/** The `SET` list of a patch (key-presence rule) and its values, numbered from `$2`; `null` when it sets nothing. */
function patchSql(patch: RunRecordPatch, first: number): { sets: string; values: unknown[] } | null {
  const sets: string[] = []
  const values: unknown[] = []
  for (const [field, column, encode, cast] of PATCH_COLUMNS) {
    if (!Object.hasOwn(patch, field)) continue
    const value = patch[field]
    // `status` is required on a record, so an explicit undefined leaves it as it is.
    if (field === 'status' && value === undefined) continue
    // A status no reader accepts is refused here, rather than stored and then refused by every `get` as corrupt.
    if (field === 'status' && !isRunStatus(value)) throw new SandboxConfigError('update.status', `RunStore.update: status ${JSON.stringify(value)} is not a RunStatus; use 'running', 'completed', 'failed', 'aborted' or another status core's isRunStatus accepts.`)
    values.push(value === undefined ? null : encode(value))
    sets.push(`${column} = $${first + values.length - 1}${cast}`)
  }
  return sets.length === 0 ? null : { sets: sets.join(', '), values }
}

/**
 * The `RunStore` of `createPostgresStores`, over a pool whose schema was
 * migrated (`migratePostgres`). Every call is one statement, so any number of
 * processes and replicas may share it.
 *
 * - `createOrResume` inserts, or returns the stored record unchanged.
 * - `update` applies only the keys present in the patch: an omitted key is
 *   untouched, a key set to `undefined` clears the field (except `status`,
 *   which a record always has: `status: undefined` leaves it). An unknown run is a no-op.
 * - `updateAtEpoch(runId, epoch, patch)` applies the patch only while the
 *   stored `driverEpoch` equals `epoch` (`undefined`: unset), in one
 *   `UPDATE … WHERE driver_epoch IS NOT DISTINCT FROM $epoch`; `true` when applied.
 * - `findActiveRun` returns the `'running'` run of the thread with the greatest
 *   `startedAt` (the first stored wins a tie), `listByThread` is ascending by
 *   `startedAt` (then insertion), `listReclaimable` has an inclusive cutoff
 *   (`detachedSince <= now - ttlMs`), in insertion order.
 * - `listUndetachedRuns({ startedBefore, limit })` lists the `'running'` runs
 *   never detached that started at or before `startedBefore`, oldest first
 *   (where `reapDetachedRuns` looks for orphans).
 * - `listEndedRuns({ finishedAfter, finishedBefore, limit })` lists the
 *   terminal runs with a `sandboxKey` whose `finishedAt` is in the window
 *   (both ends inclusive), newest first (where `reapDetachedRuns` looks for
 *   sandboxes ended runs left behind, with `endedRunGraceMs`).
 *
 * @param pool - A node-postgres `Pool`.
 * @param options - `schema` (default `tanstack_sandbox`).
 * @throws SandboxConfigError naming `postgresRunStore.schema` for an invalid schema name.
 * @throws PostgresDatabaseError from any call: `closed`, `schema-missing`, `connect-failed`, `query-failed`, `corrupt-row` (a row with an unknown status).
 * @throws InvalidRunIdError `invalid-run-id` (a rejection) from `createOrResume`, `update`, `updateAtEpoch` and `get` for a run id that breaks `assertValidRunId`'s rule, before any query runs.
 * @example
 * ```ts
 * const runs = postgresRunStore(pool, { schema: 'agent_runs' })
 * await runs.createOrResume({ runId: 'run-1', threadId: 'thread-1', startedAt: Date.now() })
 * ```
 */
export function postgresRunStore(pool: PostgresPool, options: PostgresSchemaOptions = {}): PostgresRunStore {
  return runStoreOf(contextOf(pool, options.schema, 'postgresRunStore'))
}

/** The run store over a context. Internal. */
export function runStoreOf(ctx: PostgresContext): PostgresRunStore {
  const t = ctx.tables
  const rowsOf = async (text: string, values: unknown[]): Promise<RunRecord[]> => (await query<RunRow>(ctx, text, values)).rows.map((row) => toRecord(ctx, row))
  return {
    async createOrResume(input) {
      assertValidRunId(input.runId, 'RunStore.createOrResume({ runId })')
      // One statement: insert, or (on conflict) read the stored row. The no-op UPDATE locks and returns it.
      const { rows } = await query<RunRow>(
        ctx,
        `INSERT INTO ${t.runs} AS r (run_id, thread_id, status, started_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (run_id) DO UPDATE SET run_id = r.run_id RETURNING *`,
        [input.runId, input.threadId, input.status ?? 'running', input.startedAt],
      )
      return toRecord(ctx, rows[0]!)
    },
    async update(runId, patch) {
      assertValidRunId(runId, 'RunStore.update(runId)')
      const sql = patchSql(patch, 2)
      if (sql === null) return
      await query(ctx, `UPDATE ${t.runs} SET ${sql.sets} WHERE run_id = $1`, [runId, ...sql.values])
    },
    async updateAtEpoch(runId, epoch, patch) {
      assertValidRunId(runId, 'RunStore.updateAtEpoch(runId)')
      // A patch that sets nothing still answers whether the epoch holds, through a no-op update of the row.
      const sql = patchSql(patch, 3) ?? { sets: 'status = status', values: [] }
      const result = await query(ctx, `UPDATE ${t.runs} SET ${sql.sets} WHERE run_id = $1 AND driver_epoch IS NOT DISTINCT FROM $2::bigint`, [runId, epoch ?? null, ...sql.values])
      return result.rowCount === 1
    },
    async get(runId) {
      assertValidRunId(runId, 'RunStore.get(runId)')
      const [record] = await rowsOf(`SELECT * FROM ${t.runs} WHERE run_id = $1`, [runId])
      return record ?? null
    },
    listByThread: (threadId) => rowsOf(`SELECT * FROM ${t.runs} WHERE thread_id = $1 ORDER BY started_at ASC, seq ASC`, [threadId]),
    listReclaimable: ({ now, ttlMs }) =>
      rowsOf(`SELECT * FROM ${t.runs} WHERE status = 'running' AND detached_since IS NOT NULL AND detached_since <= $1::float8 ORDER BY seq ASC`, [now - ttlMs]),
    listUndetachedRuns: ({ startedBefore, limit }) =>
      rowsOf(`SELECT * FROM ${t.runs} WHERE status = 'running' AND detached_since IS NULL AND started_at <= $1::float8 ORDER BY started_at ASC, seq ASC LIMIT $2::integer`, [startedBefore, Math.max(0, Math.floor(limit))]),
    listEndedRuns: ({ finishedAfter, finishedBefore, limit }) =>
      rowsOf(
        `SELECT * FROM ${t.runs} WHERE status IN ('completed', 'failed', 'aborted') AND sandbox_key IS NOT NULL AND finished_at BETWEEN $1::float8 AND $2::float8 ORDER BY finished_at DESC, seq DESC LIMIT $3::integer`,
        [finishedAfter, finishedBefore, Math.max(0, Math.floor(limit))],
      ),
    async findActiveRun(threadId) {
      const [record] = await rowsOf(`SELECT * FROM ${t.runs} WHERE thread_id = $1 AND status = 'running' ORDER BY started_at DESC, seq ASC LIMIT 1`, [threadId])
      return record ?? null
    },
  }
}

function toRecord(ctx: PostgresContext, row: RunRow): RunRecord {
  if (!isRunStatus(row.status)) {
    throw new PostgresDatabaseError('corrupt-row', ctx.tables.schema, `Run ${JSON.stringify(row.run_id)} has status ${JSON.stringify(row.status)} in ${ctx.tables.runs}, which is not a RunStatus. Fix or delete the row.`)
  }
  // driver_epoch (int8) arrives as a string (node-postgres keeps int8 exact); every epoch stored is a safe integer.
  const record: RunRecord = { runId: row.run_id, threadId: row.thread_id, status: row.status, startedAt: row.started_at }
  if (row.finished_at !== null) record.finishedAt = row.finished_at
  if (row.error !== null) record.error = row.error
  if (row.usage !== null) record.usage = row.usage
  if (row.sandbox_key !== null) record.sandboxKey = row.sandbox_key
  if (row.detached_since !== null) record.detachedSince = row.detached_since
  if (row.cancel_requested !== null) record.cancelRequested = row.cancel_requested
  if (row.driver_epoch !== null) record.driverEpoch = Number(row.driver_epoch)
  return record
}
