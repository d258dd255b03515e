/**
 * The run event log's vocabulary: its events, its record (core's `RunRecord`
 * plus the log's cursor and activity clock), the interface both logs
 * implement, its typed error, and the legacy record layout an earlier
 * version of this log stored, with the migration that reads it. Source: spec
 * 000 "Edge / serverless execution", spec 002 (the run log speaks core's
 * vocabulary; legacy records are migrated in place on first read).
 */
import { isRunStatus, type RunRecord as CoreRunRecord, type RunStatus as CoreRunStatus, type StreamChunk } from '@tanstack/ai'
import { SandboxError, type SandboxErrorOptions } from '@tanstack/ai-sandbox'

/** One stored event of a run: its place in the log, the chunk, and when it was stored. */
export interface RunEvent {
  /** 0-based, gap-free position in the run's log; also its SSE id and its `StreamDurability` offset (as a string). */
  readonly seq: number
  /** The `chat()` chunk. */
  readonly chunk: StreamChunk
  /** When the log stored it, ms since the epoch. */
  readonly at: number
}

/** Options of {@link RunEventLog.read}. */
export interface RunEventLogReadOptions {
  /** The exclusive cursor: events with `seq > after` are read. Default `-1` (from the first event). */
  after?: number
  /** Stops the read: the iteration ends (without an error) once it aborts. */
  signal?: AbortSignal
}

/**
 * A run's record in the log: core's `RunRecord` (the same statuses, error and
 * fields `withPersistence` and the run driver read) plus the log's own
 * bookkeeping.
 */
export interface RunLogRecord extends CoreRunRecord {
  /** The `seq` of the last stored event, `-1` while there is none. */
  lastSeq: number
  /** When the record or its log last changed, ms since the epoch. */
  updatedAt: number
  /** `true` once the log was closed (`StreamDurability.close`): it takes no more events and every reader ends. */
  logClosed?: boolean
}

/** What {@link RunEventLog.update} may change: every field of core's `RunRecord` but its id and thread. */
export type RunLogPatch = Partial<Omit<CoreRunRecord, 'runId' | 'threadId' | 'startedAt'>>

/**
 * A store of runs and their event logs: what a coordinator writes a run's
 * `chat()` chunks to and what its clients tail from a cursor.
 * {@link InMemoryRunEventLog} keeps it in memory; `DurableObjectRunEventLog`
 * in a Durable Object's SQLite storage. Both keep these rules:
 *
 * - events of one run get `seq` 0, 1, 2, … with no gap, in append order;
 * - `read({ after })` yields exactly the events with a greater `seq`, then
 *   waits for more, and ends once the log is closed or the record's status
 *   is terminal (after the last stored event), or when its signal aborts;
 * - `append` after the log closed, or after the record became terminal, is
 *   refused with `RunEventLogError` `log-closed` and stores nothing;
 * - `update` wakes every reader (a terminal status ends them).
 */
export interface RunEventLog {
  /**
   * Create the run's record (status `running`, no events), or return the
   * stored one unchanged (the `RunStore.createOrResume` rule).
   */
  open(input: { runId: string; threadId: string; startedAt?: number; status?: CoreRunStatus }): Promise<RunLogRecord>
  /** The run's record, or `null` when the log has none. */
  get(runId: string): Promise<RunLogRecord | null>
  /**
   * Patch the record (a key present with `undefined` clears that field);
   * `epoch`, when given as an option, applies it only while the stored
   * `driverEpoch` equals it.
   * @returns The record after the patch, or `null` when there is none or the epoch did not hold.
   */
  update(runId: string, patch: RunLogPatch, options?: { epoch: number | undefined }): Promise<RunLogRecord | null>
  /** Every record, or those of one thread or status, ascending by `startedAt`. */
  list(filter?: { threadId?: string; status?: CoreRunStatus }): Promise<RunLogRecord[]>
  /**
   * Store `chunks` after the run's last event, all or nothing.
   * @param options - `epoch`: store only while the record's `driverEpoch` equals it (a run without a record, or one never claimed, takes `undefined`).
   * @returns The `seq` of each chunk, in order.
   * @throws RunEventLogError `unknown-run` (no record: `open` it first), `log-closed`, `unserializable-chunk`.
   * @throws StaleEpochError when another epoch holds the run.
   */
  append(runId: string, chunks: readonly StreamChunk[], options?: { epoch: number | undefined }): Promise<number[]>
  /**
   * Close the run's log: no more appends, and every reader ends after the
   * last event. Refused (returns `false`, closes nothing) while another epoch
   * than `options.epoch` holds a claimed run.
   */
  close(runId: string, options?: { epoch: number | undefined }): Promise<boolean>
  /** The events after the cursor, then the ones appended later, until the log ends (see the rules above). */
  read(runId: string, options?: RunEventLogReadOptions): AsyncIterable<RunEvent>
  /** Every event stored now, in order; never waits (`[]` for an unknown run). */
  snapshot(runId: string): Promise<RunEvent[]>
  /** The log's cursor: the last `seq` (`-1`: none) and whether it is closed, or `null` when nothing was ever stored or closed for the run. */
  tail(runId: string): Promise<{ lastSeq: number; closed: boolean } | null>
}

/**
 * Why a run event log refused a call: `unknown-run` (no record for the run),
 * `log-closed` (the log was closed or the run ended: a finished run's
 * transcript is final), `unserializable-chunk` (a chunk JSON cannot hold:
 * nothing of its batch was stored), `corrupt-record` (a stored record no
 * version of this package writes), `invalid-run-id`, `invalid-offset`,
 * `no-data` (a from-start join waited for a first event and none came).
 */
export type RunEventLogErrorReason = 'unknown-run' | 'log-closed' | 'unserializable-chunk' | 'corrupt-record' | 'invalid-run-id' | 'invalid-offset' | 'no-data'

/**
 * A run event log call was refused.
 * @example
 * ```ts
 * if (RunEventLogError.isInstance(error) && error.reason === 'log-closed') startANewRun()
 * ```
 */
export class RunEventLogError extends SandboxError<RunEventLogErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox-cloudflare/error/RunEventLogError'
  /** The run the call was about. */
  readonly runId: string

  constructor(reason: RunEventLogErrorReason, runId: string, message: string, options?: SandboxErrorOptions) {
    super(reason, message, options)
    this.runId = runId
  }
}

/**
 * This package's own run statuses, as the first version of its event log
 * stored them: distinct from core's (`completed`/`failed`/`aborted`); the
 * `/agent` entry exports it as `LegacyRunStatus`.
 */
export type RunStatus = 'running' | TerminalRunStatus
/** The legacy terminal statuses (`LegacyTerminalRunStatus`). */
export type TerminalRunStatus = 'done' | 'error' | 'cancelled'
/** The legacy error of a run (`LegacyRunError`). */
export interface RunError {
  message: string
  code?: string
}
/** The legacy record layout (`LegacyRunRecord`): `createdAt` instead of `startedAt`, `threadId` optional. */
export interface RunRecord {
  runId: string
  threadId?: string
  status: RunStatus
  createdAt: number
  updatedAt: number
  lastSeq: number
  error?: RunError
}

const LEGACY_STATUS: Readonly<Record<TerminalRunStatus | 'running', CoreRunStatus>> = { running: 'running', done: 'completed', error: 'failed', cancelled: 'aborted' }

/**
 * Read a stored record in either layout: the current one (core's fields)
 * passes through; a legacy one is mapped (`done` → `completed`, `error` →
 * `failed`, `cancelled` → `aborted`, `createdAt` → `startedAt`, a terminal
 * one gets `finishedAt = updatedAt`, a missing `threadId` becomes the run id).
 *
 * @param stored - The record as parsed from storage.
 * @returns The record in the current layout, and whether it was migrated (the caller writes it back).
 * @throws RunEventLogError `corrupt-record` when it is neither layout.
 */
export function migrateStoredRunRecord(stored: unknown): { record: RunLogRecord; migrated: boolean } {
  const value = (typeof stored === 'object' && stored !== null ? stored : {}) as Record<string, unknown>
  const runId = typeof value.runId === 'string' ? value.runId : ''
  if (typeof value.startedAt === 'number' && isRunStatus(value.status) && typeof value.threadId === 'string') {
    return { record: { ...(value as unknown as RunLogRecord), lastSeq: numberOr(value.lastSeq, -1), updatedAt: numberOr(value.updatedAt, value.startedAt) }, migrated: false }
  }
  const legacyStatus = typeof value.status === 'string' && Object.hasOwn(LEGACY_STATUS, value.status) ? LEGACY_STATUS[value.status as RunStatus] : undefined
  if (runId === '' || legacyStatus === undefined || typeof value.createdAt !== 'number') {
    throw new RunEventLogError('corrupt-record', runId, `The stored record of run ${JSON.stringify(runId)} is in no layout this package writes (status ${JSON.stringify(value.status)}). Fix or delete it.`)
  }
  const updatedAt = numberOr(value.updatedAt, value.createdAt)
  const record: RunLogRecord = {
    runId,
    threadId: typeof value.threadId === 'string' && value.threadId !== '' ? value.threadId : runId,
    status: legacyStatus,
    startedAt: value.createdAt,
    lastSeq: numberOr(value.lastSeq, -1),
    updatedAt,
  }
  if (legacyStatus !== 'running') record.finishedAt = updatedAt
  const error = value.error as RunError | undefined
  if (error && typeof error.message === 'string') record.error = error.code === undefined ? { message: error.message } : { message: error.message, code: String(error.code) }
  return { record, migrated: true }
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback
}
