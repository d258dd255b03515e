/**
 * `DurableObjectRunEventLog`: the run event log in a Durable Object's SQLite
 * storage (`ctx.storage.sql`), so a coordinator restarted or evicted by the
 * platform finds every run and event where it left them. Three tables, made
 * on first use: records (JSON, with the columns lists filter on), one log
 * row per run (its last `seq` and whether it is closed), and the events.
 * Every write is one `transactionSync`. Readers wait in memory: a Durable
 * Object serves all of its requests in one isolate, so an append wakes every
 * reader of the object; readers do not survive a restart, their clients
 * reconnect with their cursor.
 */
import type { RunStatus } from '@tanstack/ai'
import { BackedRunEventLog, type RunLogBackend, type StoredEvent, type StoredLog, type StoredRecord } from './backed-run-event-log.js'

/** The slice of a Durable Object's `SqlStorage` the log uses. */
export interface SqlStorageLike {
  exec(query: string, ...bindings: unknown[]): { toArray(): Record<string, unknown>[] }
}

/** The slice of `DurableObjectStorage` the log uses (`ctx.storage` of a SQLite-backed Durable Object). */
export interface DurableObjectSqlStorage {
  readonly sql: SqlStorageLike
  transactionSync<T>(fn: () => T): T
}

/** Options of {@link DurableObjectRunEventLog}. */
export interface DurableObjectRunEventLogOptions {
  /** Prefix of the log's table names, for an object that keeps several logs or tables of its own. Default `tsb_run`. Letters, digits and `_`. */
  tablePrefix?: string
}

/**
 * A run event log in a SQLite-backed Durable Object's storage, with the
 * rules of `InMemoryRunEventLog` (see `RunEventLog`). Construct it in the
 * object's constructor over `ctx.storage`; the object's class must be a
 * SQLite one (`new_sqlite_classes` in wrangler's migrations). Records
 * written in this log's legacy layout (`done`/`error`/`cancelled`,
 * `createdAt`) are migrated in place on first read. One event is at most
 * about 1.9 MB of JSON (a row is at most 2 MB).
 *
 * @param storage - `ctx.storage` of the Durable Object.
 * @param options - `tablePrefix` (default `tsb_run`).
 * @throws TypeError when `storage` is not a SQLite-backed Durable Object's (it names the wrangler fix), or `tablePrefix` is not a plain name.
 * @example
 * ```ts
 * export class Coordinator extends DurableObject {
 *   log = new DurableObjectRunEventLog(this.ctx.storage)
 * }
 * ```
 */
export class DurableObjectRunEventLog extends BackedRunEventLog {
  constructor(storage: DurableObjectSqlStorage, options: DurableObjectRunEventLogOptions = {}) {
    super(sqlBackend(storage, options.tablePrefix ?? 'tsb_run'))
  }
}

/**
 * `storage` when it is a SQLite-backed Durable Object's and `prefix` a plain table-name prefix.
 * @throws TypeError naming the fix otherwise.
 */
export function checkedSqlStorage(storage: DurableObjectSqlStorage, prefix: string, what: string): DurableObjectSqlStorage {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,40}$/.test(prefix)) throw new TypeError(`${what}: tablePrefix ${JSON.stringify(prefix)} must be letters, digits and _ (at most 41), starting with a letter or _.`)
  if (typeof storage?.sql?.exec !== 'function' || typeof storage.transactionSync !== 'function') {
    throw new TypeError(`${what} needs the storage of a SQLite-backed Durable Object (ctx.storage with sql and transactionSync): declare the class under new_sqlite_classes in the migrations of wrangler.jsonc.`)
  }
  return storage
}

function sqlBackend(storage: DurableObjectSqlStorage, prefix: string): RunLogBackend {
  checkedSqlStorage(storage, prefix, 'DurableObjectRunEventLog')
  const records = `${prefix}_records`
  const logs = `${prefix}_logs`
  const events = `${prefix}_events`
  const sql = storage.sql
  sql.exec(`CREATE TABLE IF NOT EXISTS ${records} (run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, status TEXT NOT NULL, record TEXT NOT NULL)`)
  sql.exec(`CREATE INDEX IF NOT EXISTS ${records}_thread ON ${records} (thread_id)`)
  sql.exec(`CREATE TABLE IF NOT EXISTS ${logs} (run_id TEXT PRIMARY KEY, last_seq INTEGER NOT NULL, closed INTEGER NOT NULL)`)
  sql.exec(`CREATE TABLE IF NOT EXISTS ${events} (run_id TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, chunk TEXT NOT NULL, PRIMARY KEY (run_id, seq))`)
  return {
    transaction: (fn) => storage.transactionSync(fn),
    readRecord: (runId) => {
      const row = sql.exec(`SELECT record FROM ${records} WHERE run_id = ?`, runId).toArray()[0]
      return row === undefined ? undefined : JSON.parse(String(row.record))
    },
    writeRecord: (record: StoredRecord) => {
      sql.exec(
        `INSERT INTO ${records} (run_id, thread_id, status, record) VALUES (?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET thread_id = excluded.thread_id, status = excluded.status, record = excluded.record`,
        record.runId,
        record.threadId,
        record.status,
        JSON.stringify(record),
      )
    },
    listRecords: (filter: { threadId?: string; status?: RunStatus }) => {
      // Only the thread narrows in SQL: a record stored in the legacy layout holds a legacy status until it is migrated.
      const rows = filter.threadId === undefined ? sql.exec(`SELECT record FROM ${records}`).toArray() : sql.exec(`SELECT record FROM ${records} WHERE thread_id = ?`, filter.threadId).toArray()
      return rows.map((row) => JSON.parse(String(row.record)) as unknown)
    },
    readLog: (runId): StoredLog | undefined => {
      const row = sql.exec(`SELECT last_seq, closed FROM ${logs} WHERE run_id = ?`, runId).toArray()[0]
      return row === undefined ? undefined : { lastSeq: Number(row.last_seq), closed: Number(row.closed) === 1 }
    },
    writeLog: (runId, log) => {
      sql.exec(`INSERT INTO ${logs} (run_id, last_seq, closed) VALUES (?, ?, ?) ON CONFLICT (run_id) DO UPDATE SET last_seq = excluded.last_seq, closed = excluded.closed`, runId, log.lastSeq, log.closed ? 1 : 0)
    },
    insertEvents: (runId, batch: readonly StoredEvent[]) => {
      for (const event of batch) sql.exec(`INSERT INTO ${events} (run_id, seq, at, chunk) VALUES (?, ?, ?, ?)`, runId, event.seq, event.at, event.chunk)
    },
    eventsAfter: (runId, after, limit) =>
      sql
        .exec(`SELECT seq, at, chunk FROM ${events} WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, runId, after, limit)
        .toArray()
        .map((row) => ({ seq: Number(row.seq), at: Number(row.at), chunk: String(row.chunk) })),
  }
}
