/**
 * Core's two durable seams over one run event log, so core's run driver
 * (`RunController`, `pipeToRunLog`, `sandboxRunDriver`) drives a run into it
 * unchanged: `runLogStore` (the log's records as a `RunStore`, epoch-fenced
 * and listable for the reaper) and `runLogStream` (one run's events as a
 * `StreamDurability`, epoch-fenced, with the bounded `snapshot()` alignment
 * needs). Record and log share one status, so the driver's terminal update
 * ends every reader. Source: spec 000 "Edge / serverless execution", spec 002.
 */
import type { RunRecord, RunStore, StreamChunk, StreamDurability } from '@tanstack/ai'
import { assertValidRunId, parseSequenceOffset, resolveStreamSource, type EndedRunLister, type EpochFencedRunStore, type EpochFencedStreamDurability, type StreamSourceInit, type UndetachedRunLister } from '@tanstack/ai-sandbox'
import { RunEventLogError, type RunEventLog, type RunLogRecord } from './vocabulary.js'

/** The `RunStore` {@link runLogStore} returns: every optional method of core's, the epoch fence, and the reaper's listers. */
export type RunLogStore = Required<RunStore> & EpochFencedRunStore & UndetachedRunLister & EndedRunLister

/**
 * The run records of `log` as core's `RunStore`: `createOrResume` opens a
 * run, `update` patches it (waking the run's readers), and the lists read
 * the log's records. Records come back as core's `RunRecord` (without the
 * log's `lastSeq`, `updatedAt` and `logClosed`).
 *
 * @param log - The run event log (`DurableObjectRunEventLog`, `InMemoryRunEventLog`).
 * @returns A `RunStore` that is also an `EpochFencedRunStore` and lists undetached and ended runs.
 * @throws InvalidRunIdError from each method for a run id core's rule refuses; SandboxConfigError for a status that is not a `RunStatus`.
 * @example
 * ```ts
 * const controller = new RunController({ runs: runLogStore(log), durability: (runId) => runLogStream(log, { runId }) })
 * ```
 */
export function runLogStore(log: RunEventLog): RunLogStore {
  const all = async (): Promise<RunRecord[]> => (await log.list()).map(toCoreRecord)
  return {
    createOrResume: async (input) => toCoreRecord(await log.open({ runId: input.runId, threadId: input.threadId, startedAt: input.startedAt, ...(input.status ? { status: input.status } : {}) })),
    update: async (runId, patch) => {
      await log.update(runId, patch)
    },
    updateAtEpoch: async (runId, epoch, patch) => {
      assertValidRunId(runId, 'RunStore.updateAtEpoch(runId)')
      return (await log.update(runId, patch, { epoch })) !== null
    },
    get: async (runId) => {
      const record = await log.get(runId)
      return record === null ? null : toCoreRecord(record)
    },
    findActiveRun: async (threadId) => {
      const running = await log.list({ threadId, status: 'running' })
      const latest = running.reduce<RunLogRecord | undefined>((best, record) => (best === undefined || record.startedAt > best.startedAt ? record : best), undefined)
      return latest === undefined ? null : toCoreRecord(latest)
    },
    listByThread: async (threadId) => (await log.list({ threadId })).map(toCoreRecord),
    listReclaimable: async ({ now, ttlMs }) => (await all()).filter((record) => record.status === 'running' && record.detachedSince !== undefined && record.detachedSince <= now - ttlMs),
    listUndetachedRuns: async ({ startedBefore, limit }) =>
      (await all()).filter((record) => record.status === 'running' && record.detachedSince === undefined && record.startedAt <= startedBefore).slice(0, Math.max(0, Math.floor(limit))),
    listEndedRuns: async ({ finishedAfter, finishedBefore, limit }) =>
      (await all())
        .filter((record) => (record.status === 'completed' || record.status === 'failed' || record.status === 'aborted') && record.sandboxKey !== undefined && record.finishedAt !== undefined && record.finishedAt >= finishedAfter && record.finishedAt <= finishedBefore)
        .sort((a, b) => (b.finishedAt ?? 0) - (a.finishedAt ?? 0))
        .slice(0, Math.max(0, Math.floor(limit))),
  }
}

/** Options of {@link runLogStream}. */
export interface RunLogStreamOptions {
  /** ms a from-start join of a run with nothing stored waits for its first event before failing `no-data`. Default 100 (core's `memoryStream`). */
  firstChunkDeadlineMs?: number
}

/**
 * One run's events in `log` as core's `StreamDurability`, for `RunController`
 * (its per-run factory), `withSandbox`'s durability and core's durable responses.
 *
 * - The run comes from `source.runId`, or from a Request (`X-Run-Id`, then
 *   `?runId`); `resumeFrom()` is its `Last-Event-ID` header, then `?offset`,
 *   or the init's `offset`, else `null`.
 * - Offsets are the events' `seq` as strings (`'0'`, `'1'`, …), so an SSE
 *   client's `Last-Event-ID` is the cursor the log reads after.
 * - `read(offset, signal)` yields the events after `offset` (`'-1'`: from the
 *   start, `'now'`: after the current tail) and tails until the log closes,
 *   the record turns terminal, or `signal` aborts. On a run with nothing
 *   stored a from-start join waits `firstChunkDeadlineMs` for a first event
 *   and then fails `no-data`; any other offset fails `unknown-run`.
 * - `close()` closes the log: appends are refused from then on (`log-closed`).
 * - `atEpoch(epoch)`: a view whose `append` stores only while the record's
 *   `driverEpoch` is `epoch` (else `StaleEpochError`), and whose `close`
 *   closes only then. The log itself writes at epoch `undefined`.
 *
 * @param log - The run event log.
 * @param source - The incoming Request, or `{ runId, offset? }`.
 * @param options - `firstChunkDeadlineMs` (default 100).
 * @throws RunEventLogError `invalid-run-id` (from this call), `invalid-offset`, `unknown-run`, `no-data` (from `read`), `log-closed`, `unserializable-chunk` (from `append`).
 */
export function runLogStream(log: RunEventLog, source: Request | StreamSourceInit, options: RunLogStreamOptions = {}): StreamDurability & EpochFencedStreamDurability {
  const firstChunkDeadlineMs = options.firstChunkDeadlineMs ?? 100
  const { runId, resumeOffset } = resolveStreamSource(source, (id, message) => new RunEventLogError('invalid-run-id', id, message))
  const append = async (chunks: StreamChunk[], epoch: number | undefined): Promise<string[]> => (await log.append(runId, chunks, { epoch })).map(String)
  const close = async (epoch: number | undefined): Promise<void> => {
    await log.close(runId, { epoch })
  }
  const stream: StreamDurability & EpochFencedStreamDurability = {
    resumeFrom: () => resumeOffset,
    append: (chunks) => append(chunks, undefined),
    close: () => close(undefined),
    atEpoch: (epoch) => ({ ...stream, append: (chunks) => append(chunks, epoch), close: () => close(epoch) }),
    snapshot: async () => (await log.snapshot(runId)).map((event) => ({ offset: String(event.seq), chunk: event.chunk })),
    read: async function* (offset, signal) {
      const tail = await log.tail(runId)
      let after: number
      if (offset === '-1') after = -1
      else if (offset === 'now') after = tail?.lastSeq ?? -1
      else {
        const seq = parseSequenceOffset(offset)
        if (seq === undefined) throw new RunEventLogError('invalid-offset', runId, `Invalid offset ${JSON.stringify(offset)} for run ${JSON.stringify(runId)}: expected '-1', 'now' or an offset this log returned.`)
        after = seq
      }
      if (tail === null || (tail.lastSeq === -1 && !tail.closed)) {
        // Nothing stored for this run: only a from-start join may wait, and only for the first event.
        if (offset !== '-1' && offset !== 'now') throw new RunEventLogError('unknown-run', runId, `Unknown run ${JSON.stringify(runId)}: its event log has nothing stored to resume after offset ${JSON.stringify(offset)}.`)
        if (!(await firstEvent(log, runId, firstChunkDeadlineMs, signal))) {
          if (signal?.aborted) return
          throw new RunEventLogError('no-data', runId, `Run ${JSON.stringify(runId)} stored no event within ${firstChunkDeadlineMs}ms (firstChunkDeadlineMs).`)
        }
      }
      for await (const event of log.read(runId, { after, ...(signal ? { signal } : {}) })) yield { offset: String(event.seq), chunk: event.chunk }
    },
  }
  return stream
}

/** Wait up to `ms` for the run's first event or its close; `true` when one came. */
async function firstEvent(log: RunEventLog, runId: string, ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  const stop = new AbortController()
  const timer = setTimeout(() => stop.abort(), ms)
  const onAbort = (): void => stop.abort()
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    // A read from the start wakes on the first append, and also ends (with nothing) on a close.
    for await (const _event of log.read(runId, { after: -1, signal: stop.signal })) return true
    const tail = await log.tail(runId)
    return tail !== null && tail.closed
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

/** Core's record: the log's own fields dropped. */
function toCoreRecord(record: RunLogRecord): RunRecord {
  const { lastSeq: _seq, updatedAt: _updated, logClosed: _closed, ...core } = record
  return core
}
