/**
 * The one implementation of the run event log's rules (vocabulary.ts) over a
 * small synchronous storage backend: sequencing, the epoch fence, the
 * closed/terminal refusal, record patches, legacy migration, and the
 * in-process wake-ups that end a reader's wait. The in-memory log and the
 * Durable Object log differ only in their backend. Invariant: every write is
 * one backend transaction, and every reader is woken after it.
 */
import { isRunStatus, isTerminalRunStatus, type RunStatus, type StreamChunk } from '@tanstack/ai'
import { assertValidRunId, encodeStreamChunks, SandboxConfigError, StaleEpochError } from '@tanstack/ai-sandbox'
import { migrateStoredRunRecord, RunEventLogError, type RunEvent, type RunEventLog, type RunEventLogReadOptions, type RunLogPatch, type RunLogRecord } from './vocabulary.js'

/** An event as a backend stores it. */
export interface StoredEvent {
  seq: number
  at: number
  /** The chunk's JSON text. */
  chunk: string
}

/** A record as a backend stores it: the log's cursor is kept in the log row. */
export type StoredRecord = Omit<RunLogRecord, 'lastSeq' | 'logClosed'>

/** The per-run log cursor a backend stores beside the events. */
export interface StoredLog {
  /** `seq` of the last event, `-1` when none. */
  lastSeq: number
  closed: boolean
}

/** What a storage must offer the log; every method is synchronous and runs inside `transaction`. */
export interface RunLogBackend {
  transaction<T>(fn: () => T): T
  /** The stored record as parsed JSON (any layout), or `undefined`. */
  readRecord(runId: string): unknown
  writeRecord(record: StoredRecord): void
  /** Stored records (any layout, parsed), narrowed by thread or status when the backend can; the log filters again. */
  listRecords(filter: { threadId?: string; status?: RunStatus }): unknown[]
  readLog(runId: string): StoredLog | undefined
  writeLog(runId: string, log: StoredLog): void
  insertEvents(runId: string, events: readonly StoredEvent[]): void
  /** Up to `limit` events with `seq > after`, ascending. */
  eventsAfter(runId: string, after: number, limit: number): StoredEvent[]
}

/** Largest JSON text of one event, in bytes of UTF-16 length (Cloudflare's SQLite row limit is 2 MB). */
export const MAX_EVENT_CHARS = 1_900_000

/** Events fetched per backend read while a reader catches up. */
const READ_PAGE = 256

/** A {@link RunEventLog} over a {@link RunLogBackend}. */
export class BackedRunEventLog implements RunEventLog {
  readonly #backend: RunLogBackend
  readonly #waiters = new Map<string, Set<() => void>>()

  constructor(backend: RunLogBackend) {
    this.#backend = backend
  }

  async open(input: { runId: string; threadId: string; startedAt?: number; status?: RunStatus }): Promise<RunLogRecord> {
    assertValidRunId(input?.runId, 'RunEventLog.open({ runId })')
    if (typeof input.threadId !== 'string' || input.threadId === '') throw new SandboxConfigError('open.threadId', 'Invalid option open.threadId: expected the non-empty id of the conversation the run belongs to.')
    const status = input.status ?? 'running'
    if (!isRunStatus(status)) throw new SandboxConfigError('open.status', `Invalid option open.status: ${JSON.stringify(status)} is not a RunStatus ('running', 'interrupted', 'completed', 'failed', 'aborted').`)
    return this.#backend.transaction(() => {
      const existing = this.#record(input.runId)
      if (existing) return existing
      const now = Date.now()
      const record: RunLogRecord = { runId: input.runId, threadId: input.threadId, status, startedAt: input.startedAt ?? now, lastSeq: -1, updatedAt: now }
      this.#backend.writeRecord(stripLog(record))
      return this.#withLog(record)
    })
  }

  async get(runId: string): Promise<RunLogRecord | null> {
    assertValidRunId(runId, 'RunEventLog.get(runId)')
    return this.#backend.transaction(() => this.#record(runId) ?? null)
  }

  async update(runId: string, patch: RunLogPatch, options?: { epoch: number | undefined }): Promise<RunLogRecord | null> {
    assertValidRunId(runId, 'RunEventLog.update(runId)')
    if (Object.hasOwn(patch, 'status') && patch.status !== undefined && !isRunStatus(patch.status)) {
      throw new SandboxConfigError('update.status', `RunEventLog.update: status ${JSON.stringify(patch.status)} is not a RunStatus; use 'running', 'interrupted', 'completed', 'failed' or 'aborted'.`)
    }
    const updated = this.#backend.transaction(() => {
      const record = this.#record(runId)
      if (!record) return null
      if (options && record.driverEpoch !== options.epoch) return null
      const next: Record<string, unknown> = { ...record }
      for (const [key, value] of Object.entries(patch)) {
        // `status` is required on a record: an explicit undefined leaves it as it is.
        if (key === 'status' && value === undefined) continue
        if (value === undefined) delete next[key]
        else next[key] = value
      }
      next.updatedAt = Date.now()
      this.#backend.writeRecord(stripLog(next as unknown as RunLogRecord))
      return this.#withLog(next as unknown as RunLogRecord)
    })
    if (updated) this.#wake(runId)
    return updated
  }

  async list(filter: { threadId?: string; status?: RunStatus } = {}): Promise<RunLogRecord[]> {
    return this.#backend.transaction(() =>
      this.#backend
        .listRecords(filter)
        .map((stored) => this.#migrated(stored))
        .filter((record) => (filter.threadId === undefined || record.threadId === filter.threadId) && (filter.status === undefined || record.status === filter.status))
        .sort((a, b) => a.startedAt - b.startedAt)
        .map((record) => this.#withLog(record)),
    )
  }

  async append(runId: string, chunks: readonly StreamChunk[], options?: { epoch: number | undefined }): Promise<number[]> {
    assertValidRunId(runId, 'RunEventLog.append(runId)')
    if (chunks.length === 0) return []
    const texts = encodeStreamChunks(chunks, (message, cause) => new RunEventLogError('unserializable-chunk', runId, message, { cause }))
    const large = texts.findIndex((text) => text.length > MAX_EVENT_CHARS)
    if (large !== -1) {
      throw new RunEventLogError('unserializable-chunk', runId, `Run ${JSON.stringify(runId)}: chunk ${large} (${chunks[large]?.type}) is ${texts[large]!.length} characters of JSON, past the ${MAX_EVENT_CHARS} one event may hold (a Durable Object's SQLite row is at most 2 MB); nothing of the batch was stored. Move large tool results into the sandbox's files and send a reference.`)
    }
    const seqs = this.#backend.transaction(() => {
      const record = this.#record(runId)
      // A run with no record writes freely; once a driver claimed it, only its epoch does.
      if (record && record.driverEpoch !== options?.epoch) throw new StaleEpochError(runId, options?.epoch, record.driverEpoch)
      const log = this.#backend.readLog(runId) ?? { lastSeq: -1, closed: false }
      if (log.closed || (record && isTerminalRunStatus(record.status))) {
        throw new RunEventLogError('log-closed', runId, `The event log of run ${JSON.stringify(runId)} is ${log.closed ? 'closed' : `ended (status ${record?.status})`}: a finished run's transcript takes no more events. Start a new run with a new run id.`)
      }
      const at = Date.now()
      const events = texts.map((chunk, index) => ({ seq: log.lastSeq + 1 + index, at, chunk }))
      this.#backend.insertEvents(runId, events)
      this.#backend.writeLog(runId, { lastSeq: log.lastSeq + texts.length, closed: false })
      if (record) this.#backend.writeRecord(stripLog({ ...record, updatedAt: at }))
      return events.map((event) => event.seq)
    })
    this.#wake(runId)
    return seqs
  }

  async close(runId: string, options?: { epoch: number | undefined }): Promise<boolean> {
    assertValidRunId(runId, 'RunEventLog.close(runId)')
    const closed = this.#backend.transaction(() => {
      const record = this.#record(runId)
      if (record && record.driverEpoch !== options?.epoch) return false
      const log = this.#backend.readLog(runId) ?? { lastSeq: -1, closed: false }
      if (!log.closed) this.#backend.writeLog(runId, { ...log, closed: true })
      return true
    })
    if (closed) this.#wake(runId)
    return closed
  }

  async tail(runId: string): Promise<{ lastSeq: number; closed: boolean } | null> {
    return this.#backend.transaction(() => this.#backend.readLog(runId) ?? null)
  }

  async snapshot(runId: string): Promise<RunEvent[]> {
    return this.#backend.transaction(() => {
      const all: RunEvent[] = []
      for (let after = -1; ; ) {
        const page = this.#backend.eventsAfter(runId, after, READ_PAGE * 4)
        for (const stored of page) all.push(toEvent(stored))
        if (page.length === 0) return all
        after = page[page.length - 1]!.seq
      }
    })
  }

  async *read(runId: string, options: RunEventLogReadOptions = {}): AsyncGenerator<RunEvent> {
    const { signal } = options
    let after = options.after ?? -1
    for (;;) {
      if (signal?.aborted) return
      // Whether the log has ended is read with the page, in one transaction: an end seen here follows every event it ends.
      const { events, ended } = this.#backend.transaction(() => {
        const record = this.#record(runId)
        const ended = (this.#backend.readLog(runId)?.closed ?? false) || (record !== undefined && isTerminalRunStatus(record.status))
        return { events: this.#backend.eventsAfter(runId, after, READ_PAGE), ended }
      })
      for (const stored of events) {
        if (signal?.aborted) return
        after = stored.seq
        yield toEvent(stored)
      }
      if (events.length === 0) {
        if (ended) return
        await this.#changed(runId, signal)
      }
    }
  }

  /** The record in the current layout (a legacy one is written back migrated), with its log's cursor; `undefined` when none. */
  #record(runId: string): RunLogRecord | undefined {
    const stored = this.#backend.readRecord(runId)
    return stored === undefined ? undefined : this.#withLog(this.#migrated(stored))
  }

  #migrated(stored: unknown): RunLogRecord {
    const { record, migrated } = migrateStoredRunRecord(stored)
    if (migrated) this.#backend.writeRecord(stripLog(record))
    return record
  }

  #withLog(record: RunLogRecord): RunLogRecord {
    const log = this.#backend.readLog(record.runId)
    const joined: RunLogRecord = { ...record, lastSeq: log?.lastSeq ?? -1 }
    if (log?.closed) joined.logClosed = true
    else delete joined.logClosed
    return joined
  }

  #wake(runId: string): void {
    for (const wake of [...(this.#waiters.get(runId) ?? [])]) wake()
  }

  /** Wait until a write on `runId` (in this isolate) or `signal` aborts. */
  #changed(runId: string, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      let set = this.#waiters.get(runId)
      if (!set) this.#waiters.set(runId, (set = new Set()))
      const done = (): void => {
        set.delete(done)
        if (set.size === 0) this.#waiters.delete(runId)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      set.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }
}

/** The record as stored: the log's cursor lives in the log row, not in the record. */
function stripLog(record: RunLogRecord): StoredRecord {
  const { logClosed: _closed, lastSeq: _seq, ...rest } = record
  return rest
}

function toEvent(stored: StoredEvent): RunEvent {
  return { seq: stored.seq, at: stored.at, chunk: JSON.parse(stored.chunk) as StreamChunk }
}
