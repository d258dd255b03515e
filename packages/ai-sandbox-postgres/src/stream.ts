/**
 * A run's delivery-durability log over `stream_logs` and `stream_chunks`:
 * string offsets, one transaction per batch, a LISTEN/NOTIFY tail and the
 * epoch fence (`atEpoch`); mirrors core's `memoryStream`. Invariants: offsets
 * are gap-free and unique under concurrent appenders, and a fenced batch is
 * stored only while the run's `driver_epoch` is the writer's.
 * Design notes: docs/design/stores.md
 */
import type { StreamChunk, StreamDurability, UpsertableStreamDurability } from '@tanstack/ai'
import { encodeStreamChunks, parseOptions, parseSequenceOffset, planSequenceUpsert, resolveStreamSource, StaleEpochError, type EpochFencedStreamDurability, type StreamSourceInit } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { assertOpen, contextOf, query, schemaName, transaction, type PostgresClient, type PostgresContext, type PostgresPool } from './database.js'
import { PostgresStreamError } from './errors.js'
import { notifierOf, type TailSubscription } from './notifier.js'

/** Default ms a from-start join waits for a run's first chunk before failing (core's `memoryStream` default). */
export const DEFAULT_FIRST_CHUNK_DEADLINE_MS = 100

/** Default ms a tailing reader waits for a notification before it re-queries anyway (the backstop for a lost NOTIFY; not a poll). */
export const DEFAULT_RECHECK_MS = 2000

/** Chunks fetched per query while a `read` catches up, so a long log is never loaded at once. */
export const READ_PAGE_SIZE = 512

/** Where a run's log is attached: the run id and the offset a consumer resumes after (`null`: a producer). Core's `StreamSourceInit`. */
export type PostgresStreamInit = StreamSourceInit

/** Options of {@link postgresStream}. */
export interface PostgresStreamOptions {
  /** The schema the tables live in (default `tanstack_sandbox`). */
  schema?: string
  /** ms a from-start join of a run with nothing stored waits for its first chunk (default {@link DEFAULT_FIRST_CHUNK_DEADLINE_MS}). */
  firstChunkDeadlineMs?: number
  /** ms a tailing reader waits for a NOTIFY before it re-queries anyway (default {@link DEFAULT_RECHECK_MS}); only a backstop. */
  recheckMs?: number
}

/** `firstChunkDeadlineMs`: whole ms, 0 to one hour. Shared with `createPostgresStores`. Internal. */
export const firstChunkDeadlineMsSchema = z.number().int('expected an integer number of milliseconds (the first-chunk deadline)').min(0, 'expected at least 0 ms').max(3_600_000, 'expected at most 3 600 000 ms')
/** `recheckMs`: whole ms, 100 to 600 000. Shared with `createPostgresStores`. Internal. */
export const recheckMsSchema = z.number().int('expected an integer number of milliseconds (the missed-notification recheck)').min(100, 'expected at least 100 ms').max(600_000, 'expected at most 600 000 ms')

const optionsSchema = z.object({ schema: schemaName.optional(), firstChunkDeadlineMs: firstChunkDeadlineMsSchema.optional(), recheckMs: recheckMsSchema.optional() }).strict()

/** The log of one run: upsertable, and fenced by epoch. */
export type PostgresStream = UpsertableStreamDurability & EpochFencedStreamDurability

/** A stored entry of the log. */
type Entry = { offset: string; chunk: StreamChunk }

interface PageRow {
  seq: string | null
  chunk: string | null
  closed: boolean | null
  next_seq: string | null
}

/**
 * The stream log of one run in the shared database: an
 * `UpsertableStreamDurability` for core's durable responses and
 * `withSandbox`'s `durability.adapter`, and an `EpochFencedStreamDurability`
 * (`atEpoch`) for `sandboxRunDriver`, readable from any process that reaches
 * the database.
 *
 * - The run id comes from `source.runId`, or from a Request through core's
 *   `resolveResumeRunId` (`X-Run-Id`, then `?runId`); a Request naming none
 *   gets a fresh UUID, as `memoryStream` does for a new producer.
 * - `resumeFrom()` is the Request's `Last-Event-ID` header, then `?offset`, or
 *   the init's `offset`, else `null`.
 * - `atEpoch(epoch).append(chunks)` stores the batch in one transaction only
 *   while the run's record has `driverEpoch === epoch` (`undefined`: unset),
 *   checked under `SELECT … FOR SHARE` of the record in that transaction;
 *   otherwise it stores nothing and rejects with `StaleEpochError`. A run with
 *   no record appends freely. `append` is `atEpoch(undefined).append`. Returns
 *   one offset per chunk: `'0'`, `'1'`, … in append order, gap-free under
 *   concurrent appenders, and notifies readers in the same transaction.
 * - `read(offset, signal)` yields entries strictly after `offset` (`'-1'`: from
 *   the start, `'now'`: after the current tail), paging through the log
 *   ({@link READ_PAGE_SIZE} rows a query), and tails until the log is closed or
 *   `signal` aborts, woken by LISTEN/NOTIFY on one shared connection per pool;
 *   a reader re-queries after `recheckMs` without a notification, as a
 *   backstop only. On a run with nothing stored, a from-start join waits
 *   `firstChunkDeadlineMs` for a first chunk and then throws `no-data`; any
 *   other offset throws `unknown-run`.
 * - `snapshot()` returns everything stored now and never waits (`[]` for an unknown run).
 * - `close()` marks the log closed, which ends every reader in every process; like
 *   `append` it is fenced by epoch (the plain log at `undefined`, a view at its
 *   epoch): a close from a writer another epoch superseded resolves without
 *   closing, so it cannot end the readers of the run its successor drives.
 *   Once closed, `append` and `upsert` reject with `log-closed` and store nothing.
 * - `upsert(entries)` re-stores entries at offsets already returned (replacing
 *   the chunk) and appends new ones at exactly the next offsets, all or
 *   nothing. It is a repair tool and is not fenced.
 *
 * @param pool - A node-postgres `Pool` whose schema was migrated (`migratePostgres`).
 * @param source - The incoming Request, or `{ runId, offset? }`.
 * @param options - `schema` (`tanstack_sandbox`), `firstChunkDeadlineMs` (100), `recheckMs` (2000).
 * @throws SandboxConfigError naming the option (e.g. `postgresStream.recheckMs`) when one is invalid.
 * @throws PostgresStreamError `invalid-run-id` for an empty run id or one with CR/LF; `invalid-offset`, `unknown-run`, `no-data` from `read`; `invalid-upsert` from `upsert`; `log-closed` from `append` / `upsert` on a closed log.
 * @throws StaleEpochError from `append` when another epoch holds the run.
 * @throws PostgresDatabaseError from any call when the database refused (`closed`, `schema-missing`, `connect-failed`, `query-failed`).
 * @example
 * ```ts
 * const log = postgresStream(pool, { runId: 'run-1' })
 * const [offset] = await log.append([chunk])
 * for await (const { chunk } of log.read('-1')) render(chunk)
 * ```
 */
export function postgresStream(pool: PostgresPool, source: Request | PostgresStreamInit, options: PostgresStreamOptions = {}): PostgresStream {
  const parsed = parseOptions(optionsSchema, options, 'postgresStream')
  return streamOf(contextOf(pool, parsed.schema, 'postgresStream'), source, parsed)
}

/** The stream over a context. Internal. */
export function streamOf(ctx: PostgresContext, source: Request | PostgresStreamInit, options: { firstChunkDeadlineMs?: number | undefined; recheckMs?: number | undefined }): PostgresStream {
  const firstChunkDeadlineMs = options.firstChunkDeadlineMs ?? DEFAULT_FIRST_CHUNK_DEADLINE_MS
  const recheckMs = options.recheckMs ?? DEFAULT_RECHECK_MS
  const { runId, resumeOffset } = resolveStreamSource(source, (id, message) => new PostgresStreamError('invalid-run-id', id, message))
  const t = ctx.tables

  /** A finished run's transcript is final: thrown (rolling the batch back) once its log is closed. */
  const closedError = (): PostgresStreamError =>
    new PostgresStreamError('log-closed', runId, `The event log of run ${JSON.stringify(runId)} is closed: a finished run's transcript takes no more chunks. Start a new run with a new run id.`)
  /**
   * Reserve `count` offsets on the run's counter row (locking it until commit) and return the first; refuse a closed
   * log (close() marks the same row, so the lock orders the two).
   */
  const reserve = async (client: PostgresClient, count: number): Promise<number> => {
    const { rows } = await client.query<{ next_seq: string; closed: boolean }>(
      `INSERT INTO ${t.streamLogs} AS l (run_id, next_seq) VALUES ($1, $2) ON CONFLICT (run_id) DO UPDATE SET next_seq = l.next_seq + EXCLUDED.next_seq RETURNING next_seq, closed_at IS NOT NULL AS closed`,
      [runId, count],
    )
    if (rows[0]!.closed) throw closedError()
    return Number(rows[0]!.next_seq) - count
  }
  /** Every chunk as JSON before anything of its batch is written: one JSON cannot hold refuses the batch, typed. */
  const encode = (chunks: readonly StreamChunk[]): string[] => encodeStreamChunks(chunks, (message, cause) => new PostgresStreamError('unserializable-chunk', runId, message, { cause }))
  const insertAndNotify = (client: PostgresClient, rows: ReadonlyArray<{ seq: number; text: string }>): Promise<unknown> =>
    client.query(
      `WITH stored AS (INSERT INTO ${t.streamChunks} (run_id, seq, chunk) SELECT $1, s, c FROM unnest($2::bigint[], $3::text[]) AS t(s, c) RETURNING 1)
       SELECT pg_notify($4, md5($1)) FROM (SELECT count(*) FROM stored) AS n`,
      [runId, rows.map((row) => row.seq), rows.map((row) => row.text), t.channel],
    )

  const appendAt = async (epoch: number | undefined, chunks: readonly StreamChunk[]): Promise<string[]> => {
    assertOpen(ctx)
    if (chunks.length === 0) return []
    const texts = encode(chunks)
    return transaction(ctx, async (client) => {
      // The fence: the record's epoch, share-locked so a claim's UPDATE waits for this batch (or this batch sees the claim).
      const { rows: record } = await client.query<{ driver_epoch: string | null }>(`SELECT driver_epoch FROM ${t.runs} WHERE run_id = $1 FOR SHARE`, [runId])
      if (record.length === 1) {
        const stored = record[0]!.driver_epoch === null ? undefined : Number(record[0]!.driver_epoch)
        if (stored !== epoch) throw new StaleEpochError(runId, epoch, stored)
      }
      const first = await reserve(client, chunks.length)
      const rows = texts.map((text, index) => ({ seq: first + index, text }))
      await insertAndNotify(client, rows)
      return rows.map((row) => String(row.seq))
    })
  }

  /**
   * Mark the log closed, only while the run's record has `driverEpoch === epoch` (or there is no record), checked under
   * the same share lock as an append: a writer that lost the run must not end the readers of the run its successor drives.
   * A refused close resolves without closing: it runs in teardowns, which have no one to tell.
   */
  const closeAt = async (epoch: number | undefined): Promise<void> => {
    await transaction(ctx, async (client) => {
      const { rows: record } = await client.query<{ driver_epoch: string | null }>(`SELECT driver_epoch FROM ${t.runs} WHERE run_id = $1 FOR SHARE`, [runId])
      if (record.length === 1 && (record[0]!.driver_epoch === null ? undefined : Number(record[0]!.driver_epoch)) !== epoch) return
      await client.query(
        `WITH marked AS (INSERT INTO ${t.streamLogs} AS l (run_id, closed_at) VALUES ($1, $2) ON CONFLICT (run_id) DO UPDATE SET closed_at = COALESCE(l.closed_at, EXCLUDED.closed_at) RETURNING 1)
         SELECT pg_notify($3, md5($1)) FROM (SELECT count(*) FROM marked) AS n`,
        [runId, Date.now(), t.channel],
      )
    })
  }

  const upsert = async (entries: ReadonlyArray<{ chunk: StreamChunk; offset: string }>): Promise<string[]> => {
    assertOpen(ctx)
    if (entries.length === 0) return []
    return transaction(ctx, async (client) => {
      // Lock the run's counter row (created at 0 when missing) so no append interleaves, then validate the whole batch
      // against it before writing (a refusal rolls the transaction back).
      const { rows } = await client.query<{ next_seq: string; closed: boolean }>(
        `INSERT INTO ${t.streamLogs} AS l (run_id, next_seq) VALUES ($1, 0) ON CONFLICT (run_id) DO UPDATE SET next_seq = l.next_seq RETURNING next_seq, closed_at IS NOT NULL AS closed`,
        [runId],
      )
      if (rows[0]!.closed) throw closedError()
      const plan = planSequenceUpsert(entries, Number(rows[0]!.next_seq) - 1, (message) => new PostgresStreamError('invalid-upsert', runId, message))
      const texts = encode(plan.map((step) => step.chunk))
      const steps = plan.map((step, index) => ({ ...step, text: texts[index]! }))
      const replaced = steps.filter((step) => step.stored)
      const fresh = steps.filter((step) => !step.stored)
      if (replaced.length > 0) {
        await client.query(
          `UPDATE ${t.streamChunks} AS c SET chunk = u.c FROM unnest($2::bigint[], $3::text[]) AS u(s, c) WHERE c.run_id = $1 AND c.seq = u.s`,
          [runId, replaced.map((row) => row.seq), replaced.map((row) => row.text)],
        )
      }
      if (fresh.length > 0) await reserve(client, fresh.length)
      await insertAndNotify(client, fresh)
      return plan.map((step) => String(step.seq))
    })
  }

  /** One page after `after`, with the log's closed flag and counter from the same snapshot (one statement). */
  const fetchPage = async (after: number): Promise<{ rows: Entry[]; closed: boolean; stored: number }> => {
    const { rows } = await query<PageRow>(
      ctx,
      `SELECT c.seq, c.chunk, l.closed_at IS NOT NULL AS closed, l.next_seq
       FROM (SELECT 1) AS one
       LEFT JOIN ${t.streamLogs} AS l ON l.run_id = $1
       LEFT JOIN LATERAL (SELECT seq, chunk FROM ${t.streamChunks} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3) AS c ON true
       ORDER BY c.seq`,
      [runId, after, READ_PAGE_SIZE],
    )
    const head = rows[0]
    return {
      rows: rows.flatMap((row) => (row.seq === null ? [] : [{ offset: row.seq, chunk: JSON.parse(row.chunk!) as StreamChunk }])),
      closed: head?.closed === true,
      stored: Number(head?.next_seq ?? 0),
    }
  }

  const read = async function* (offset: string, signal?: AbortSignal): AsyncGenerator<Entry> {
    assertOpen(ctx)
    const fromStart = offset === '-1' || offset === 'now'
    let after: number
    if (offset === '-1' || offset === 'now') after = -1
    else {
      const seq = parseSequenceOffset(offset)
      if (seq === undefined) throw new PostgresStreamError('invalid-offset', runId, `Invalid offset ${JSON.stringify(offset)} for run ${JSON.stringify(runId)}: expected '-1', 'now' or an offset this log returned.`)
      after = seq
    }
    // Listen before the first query, so an append committed after it is never missed.
    const subscription: TailSubscription = notifierOf(ctx).subscribe(t.channel, runId)
    try {
      await subscription.ready
      if (offset === 'now') {
        const { rows } = await query<{ next_seq: string }>(ctx, `SELECT next_seq FROM ${t.streamLogs} WHERE run_id = $1`, [runId])
        after = Number(rows[0]?.next_seq ?? 0) - 1
      }
      let batch = await fetchPage(after)
      if (batch.rows.length === 0 && !batch.closed && batch.stored === 0) {
        // Nothing stored for this run: only a from-start join may wait, and only for the first chunk.
        if (!fromStart) throw new PostgresStreamError('unknown-run', runId, `Unknown run ${JSON.stringify(runId)}: its stream log has nothing stored to resume after offset ${JSON.stringify(offset)}.`)
        const deadline = Date.now() + firstChunkDeadlineMs
        while (batch.rows.length === 0 && !batch.closed) {
          if (signal?.aborted) return
          const left = deadline - Date.now()
          if (left <= 0) throw new PostgresStreamError('no-data', runId, `Run ${JSON.stringify(runId)} stored no chunk within ${firstChunkDeadlineMs}ms (firstChunkDeadlineMs).`)
          await subscription.wait(Math.min(recheckMs, left), signal)
          batch = await fetchPage(after)
        }
      }
      for (;;) {
        for (const entry of batch.rows) {
          if (signal?.aborted) return
          after = Number(entry.offset)
          yield entry
        }
        if (signal?.aborted) return
        if (batch.rows.length === 0) {
          if (batch.closed) return
          await subscription.wait(recheckMs, signal)
          if (signal?.aborted) return
        }
        batch = await fetchPage(after)
      }
    } finally {
      subscription.close()
    }
  }

  const log: PostgresStream = {
    resumeFrom: () => resumeOffset,
    append: (chunks) => appendAt(undefined, chunks),
    upsert,
    read,
    async snapshot() {
      const { rows } = await query<{ seq: string; chunk: string }>(ctx, `SELECT seq, chunk FROM ${t.streamChunks} WHERE run_id = $1 ORDER BY seq`, [runId])
      return rows.map((row) => ({ offset: row.seq, chunk: JSON.parse(row.chunk) as StreamChunk }))
    },
    close: () => closeAt(undefined),
    atEpoch(epoch): StreamDurability {
      return { resumeFrom: log.resumeFrom, append: (chunks) => appendAt(epoch, chunks), read: log.read, snapshot: log.snapshot, close: () => closeAt(epoch) }
    },
  }
  return log
}
