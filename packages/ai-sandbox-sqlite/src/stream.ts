/**
 * A run's delivery-durability log over `stream_chunks` and `stream_logs`:
 * 0-based integer offsets as strings, one transaction per batch, a tail that
 * polls the file every `pollMs` (and wakes at once for appends made through
 * the same connection). Mirrors the observable contract of core's
 * `memoryStream`, including the from-start join's first-chunk deadline.
 */
import type { StreamChunk, UpsertableStreamDurability } from '@tanstack/ai'
import { encodeStreamChunks, parseSequenceOffset, planSequenceUpsert, resolveStreamSource, StaleEpochError, type EpochFencedStreamDurability, type StreamSourceInit } from '@tanstack/ai-sandbox'
import { setTimeout as sleep } from 'node:timers/promises'
import { assertOpen, type SqliteDatabase } from './database.js'
import { SqliteStreamError } from './errors.js'

/** Default ms between two looks at the file while a `read` tails an open log. */
export const DEFAULT_STREAM_POLL_MS = 25

/** Default ms a from-start join waits for a run's first chunk before failing (core's `memoryStream` default). */
export const DEFAULT_FIRST_CHUNK_DEADLINE_MS = 100

/** Chunks fetched per query while a `read` catches up, so a long log is never loaded at once. */
const READ_PAGE = 512

/** Where a run's log is attached: the run id and the offset a consumer resumes after (`null`: a producer). Core's `StreamSourceInit`. */
export type SqliteStreamInit = StreamSourceInit

/** Options of {@link sqliteStream}. */
export interface SqliteStreamOptions {
  /** ms between two looks at the file while tailing (default {@link DEFAULT_STREAM_POLL_MS}). */
  pollMs?: number
  /** ms a from-start join of a run with nothing stored waits for its first chunk (default {@link DEFAULT_FIRST_CHUNK_DEADLINE_MS}). */
  firstChunkDeadlineMs?: number
}

/** A stored entry of the log. */
type Entry = { offset: string; chunk: StreamChunk }

interface ChunkRow {
  seq: number
  chunk: string
}

/** Wake-ups for readers of one connection, so an in-process append does not wait for the next poll. */
const wakers = new WeakMap<SqliteDatabase, Map<string, Set<() => void>>>()

function wake(db: SqliteDatabase, runId: string): void {
  const set = wakers.get(db)?.get(runId)
  if (set) for (const fn of [...set]) fn()
}

/** Wait until `ms` pass, an in-process append or close on `runId` happens, or `signal` aborts. */
async function waitForChange(db: SqliteDatabase, runId: string, ms: number, signal: AbortSignal | undefined): Promise<void> {
  let byRun = wakers.get(db)
  if (byRun === undefined) wakers.set(db, (byRun = new Map()))
  let set = byRun.get(runId)
  if (set === undefined) byRun.set(runId, (set = new Set()))
  const early = new AbortController()
  const onAbort = (): void => early.abort()
  set.add(onAbort)
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    await sleep(ms, undefined, { signal: early.signal }).catch(() => undefined)
  } finally {
    signal?.removeEventListener('abort', onAbort)
    set.delete(onAbort)
    if (set.size === 0) byRun.delete(runId)
  }
}

/**
 * The stream log of one run in the shared database: a `StreamDurability`
 * (with `upsert`, so an `UpsertableStreamDurability`) for core's durable
 * responses and `withSandbox`'s `durability.adapter`, readable from any
 * process that opens the file.
 *
 * - The run id comes from `source.runId`, or from a Request through core's
 *   `resolveResumeRunId` (`X-Run-Id`, then `?runId`); a Request naming none
 *   gets a fresh UUID, as `memoryStream` does for a new producer.
 * - `resumeFrom()` is the Request's `Last-Event-ID` header, then `?offset`, or
 *   the init's `offset`, else `null`.
 * - `append` stores a batch in one transaction and returns one offset per
 *   chunk: `'0'`, `'1'`, … in append order.
 * - `read(offset, signal)` yields entries strictly after `offset` (`'-1'`: from
 *   the start, `'now'`: after the current tail) and tails until the log is
 *   closed or `signal` aborts, looking at the file every `pollMs`. On a run
 *   with nothing stored, a from-start join waits `firstChunkDeadlineMs` for a
 *   first chunk and then throws `no-data`; any other offset throws `unknown-run`.
 * - `snapshot()` returns everything stored now and never waits (`[]` for an unknown run).
 * - `close()` marks the log closed, which ends every reader in every process;
 *   from then on `append` and `upsert` (at any epoch) reject with `log-closed`
 *   and store nothing.
 * - `upsert(entries)` re-stores entries at offsets already returned (replacing
 *   the chunk) and appends new ones at exactly the next offsets, all or nothing.
 * - `atEpoch(epoch)` (`EpochFencedStreamDurability`): a view whose `append`
 *   and `upsert` store their batch only while the run's record in the same
 *   database has `driverEpoch` equal to `epoch`, checked inside the write
 *   transaction; otherwise nothing is stored and they reject with
 *   `StaleEpochError`; its `close` closes only while the epoch holds, and
 *   otherwise resolves without closing (so a writer that lost the run cannot
 *   end the readers of the run its successor drives). The log itself writes
 *   and closes at epoch `undefined`: once a driver has claimed the run, only
 *   a view at the claimed epoch does. A run with no record writes freely.
 *
 * @param db - An open database from `openSqliteDatabase`.
 * @param source - The incoming Request, or `{ runId, offset? }`.
 * @throws SqliteStreamError `invalid-run-id` for an empty run id or one with CR/LF; `invalid-offset`, `unknown-run`, `no-data` from `read`; `invalid-upsert` from `upsert`; `log-closed` from `append` / `upsert` on a closed log.
 * @throws StaleEpochError from `append` / `upsert` when another epoch holds the run.
 * @throws SqliteDatabaseError `closed` from any call after the database was closed.
 */
export function sqliteStream(db: SqliteDatabase, source: Request | SqliteStreamInit, options: SqliteStreamOptions = {}): UpsertableStreamDurability & EpochFencedStreamDurability {
  const pollMs = options.pollMs ?? DEFAULT_STREAM_POLL_MS
  const firstChunkDeadlineMs = options.firstChunkDeadlineMs ?? DEFAULT_FIRST_CHUNK_DEADLINE_MS
  const { runId, resumeOffset } = resolveStreamSource(source, (id, message) => new SqliteStreamError('invalid-run-id', id, message))

  const tailSeq = db.prepare<[string], { tail: number | null }>('SELECT MAX(seq) AS tail FROM stream_chunks WHERE run_id = ?')
  const insert = db.prepare<[string, number, string]>('INSERT INTO stream_chunks (run_id, seq, chunk) VALUES (?, ?, ?)')
  const replace = db.prepare<[string, string, number]>('UPDATE stream_chunks SET chunk = ? WHERE run_id = ? AND seq = ?')
  const page = db.prepare<[string, number, number], ChunkRow>('SELECT seq, chunk FROM stream_chunks WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?')
  const all = db.prepare<[string], ChunkRow>('SELECT seq, chunk FROM stream_chunks WHERE run_id = ? ORDER BY seq')
  const closedAt = db.prepare<[string], { closed_at: number | null }>('SELECT closed_at FROM stream_logs WHERE run_id = ?')
  const markClosed = db.prepare<[string, number]>('INSERT INTO stream_logs (run_id, closed_at) VALUES (?, ?) ON CONFLICT (run_id) DO UPDATE SET closed_at = COALESCE(closed_at, excluded.closed_at)')

  const storedEpoch = db.prepare<[string], { driver_epoch: number | null }>('SELECT driver_epoch FROM runs WHERE run_id = ?')
  /** Inside a write transaction: refuse unless the run has no record or its `driverEpoch` is the writer's. */
  const checkEpoch = (epoch: number | undefined): void => {
    const row = storedEpoch.get(runId)
    if (row !== undefined && row.driver_epoch !== (epoch ?? null)) throw new StaleEpochError(runId, epoch, row.driver_epoch ?? undefined)
  }
  /** Inside a write transaction: refuse once the log is closed, so a finished run's transcript stays final. */
  const checkOpen = (): void => {
    if (closedAt.get(runId)?.closed_at != null) throw new SqliteStreamError('log-closed', runId, `The event log of run ${JSON.stringify(runId)} is closed: a finished run's transcript takes no more chunks. Start a new run with a new run id.`)
  }
  /** Every chunk as JSON before anything of its batch is written: one JSON cannot hold refuses the batch, typed. */
  const encode = (chunks: readonly StreamChunk[]): string[] => encodeStreamChunks(chunks, (message, cause) => new SqliteStreamError('unserializable-chunk', runId, message, { cause }))
  const appendBatch = db.transaction((texts: readonly string[], epoch: number | undefined): string[] => {
    checkEpoch(epoch)
    checkOpen()
    const first = (tailSeq.get(runId)?.tail ?? -1) + 1
    return texts.map((text, index) => {
      insert.run(runId, first + index, text)
      return String(first + index)
    })
  })
  const upsertBatch = db.transaction((entries: ReadonlyArray<{ chunk: StreamChunk; offset: string }>, epoch: number | undefined): string[] => {
    checkEpoch(epoch)
    checkOpen()
    // The whole batch is validated against the tail before anything is written.
    const plan = planSequenceUpsert(entries, tailSeq.get(runId)?.tail ?? -1, (message) => new SqliteStreamError('invalid-upsert', runId, message))
    const texts = encode(plan.map((step) => step.chunk))
    plan.forEach((step, index) => {
      if (step.stored) replace.run(texts[index]!, runId, step.seq)
      else insert.run(runId, step.seq, texts[index]!)
    })
    return plan.map((step) => String(step.seq))
  })
  const fetchPage = db.transaction((after: number): { rows: ChunkRow[]; closed: boolean } => {
    // Closed is read first, in the same snapshot: a close seen here follows every append it ends.
    const closed = closedAt.get(runId)?.closed_at != null
    return { rows: page.all(runId, after, READ_PAGE), closed }
  })

  const toEntry = (row: ChunkRow): Entry => ({ offset: String(row.seq), chunk: JSON.parse(row.chunk) as StreamChunk })

  /** Close only while the epoch holds: a writer another epoch superseded must not end the readers of its successor's run. */
  const closeBatch = db.transaction((epoch: number | undefined): boolean => {
    const row = storedEpoch.get(runId)
    if (row !== undefined && row.driver_epoch !== (epoch ?? null)) return false
    markClosed.run(runId, Date.now())
    return true
  })
  const close = async (epoch: number | undefined): Promise<void> => {
    assertOpen(db)
    if (closeBatch.immediate(epoch)) wake(db, runId)
  }
  const append = async (chunks: readonly StreamChunk[], epoch: number | undefined): Promise<string[]> => {
    assertOpen(db)
    if (chunks.length === 0) return []
    const offsets = appendBatch.immediate(encode(chunks), epoch)
    wake(db, runId)
    return offsets
  }
  const upsert = async (entries: ReadonlyArray<{ chunk: StreamChunk; offset: string }>, epoch: number | undefined): Promise<string[]> => {
    assertOpen(db)
    const offsets = upsertBatch.immediate(entries, epoch)
    wake(db, runId)
    return offsets
  }

  const log: UpsertableStreamDurability & EpochFencedStreamDurability = {
    resumeFrom: () => resumeOffset,
    append: (chunks) => append(chunks, undefined),
    upsert: (entries) => upsert(entries, undefined),
    atEpoch: (epoch): UpsertableStreamDurability => ({ ...log, append: (chunks) => append(chunks, epoch), upsert: (entries) => upsert(entries, epoch), close: () => close(epoch) }),
    async snapshot() {
      assertOpen(db)
      return all.all(runId).map(toEntry)
    },
    close: () => close(undefined),
    read: async function* (offset, signal) {
      assertOpen(db)
      const fromStart = offset === '-1' || offset === 'now'
      let after: number
      if (offset === '-1') after = -1
      else if (offset === 'now') after = tailSeq.get(runId)?.tail ?? -1
      else {
        const seq = parseSequenceOffset(offset)
        if (seq === undefined) throw new SqliteStreamError('invalid-offset', runId, `Invalid offset ${JSON.stringify(offset)} for run ${JSON.stringify(runId)}: expected '-1', 'now' or an offset this log returned.`)
        after = seq
      }
      let first = fetchPage(after)
      if (first.rows.length === 0 && !first.closed && tailSeq.get(runId)?.tail == null) {
        // Nothing stored for this run: only a from-start join may wait, and only for the first chunk.
        if (!fromStart) throw new SqliteStreamError('unknown-run', runId, `Unknown run ${JSON.stringify(runId)}: its stream log has nothing stored to resume after offset ${JSON.stringify(offset)}.`)
        const deadline = Date.now() + firstChunkDeadlineMs
        while (first.rows.length === 0 && !first.closed) {
          if (signal?.aborted) return
          const left = deadline - Date.now()
          if (left <= 0) throw new SqliteStreamError('no-data', runId, `Run ${JSON.stringify(runId)} stored no chunk within ${firstChunkDeadlineMs}ms (firstChunkDeadlineMs).`)
          await waitForChange(db, runId, Math.min(pollMs, left), signal)
          assertOpen(db)
          first = fetchPage(after)
        }
      }
      let batch = first
      for (;;) {
        for (const row of batch.rows) {
          if (signal?.aborted) return
          after = row.seq
          yield toEntry(row)
        }
        if (signal?.aborted) return
        if (batch.rows.length === 0) {
          if (batch.closed) return
          await waitForChange(db, runId, pollMs, signal)
          if (signal?.aborted) return
        }
        assertOpen(db)
        batch = fetchPage(after)
      }
    },
  }
  return log
}
