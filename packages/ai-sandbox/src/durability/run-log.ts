/**
 * The run driver's pump: `pipeToRunLog` moves one `chat()` stream into a run's
 * event log and record; it owns the terminal status and the log's `close()`.
 * Invariant: total; with valid options it never throws or rejects.
 * Source: spec 000 "Edge / serverless execution", spec 002. One file: the pump
 * and its terminal bookkeeping read in order. Design notes: docs/design/durability.md
 */
import { EventType, RUN_ACCEPTED_EVENT, isCancelRequestedReason, isTerminalRunStatus, wasCancelRequested, type RunRecord, type RunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import { loggerSchema, parseOptions } from '../contracts/validate.js'
import { runIdProblem } from '../contracts/run-id.js'
import { listenForRunDetach } from './detach-notice.js'
import { decideOutcome, isFinalFinish, type PumpEnd } from './run-outcome.js'
import { LogWriter, MAX_APPEND_BATCH } from './run-log-writer.js'
import { guard, reporter, type Reporter } from './run-report.js'

/** Options of {@link pipeToRunLog}. */
export interface PipeToRunLogOptions<TOffset extends string = string> {
  /** The run record store (the same one `withPersistence` uses). The record is created or resumed with `createOrResume`. */
  runs: RunStore
  /** The run's event log, bound to `runId` (e.g. `memoryStream({ runId })`). Only `append` and `close` are called. */
  durability: StreamDurability<TOffset>
  /** The run's id; the record and the log are both keyed by it. */
  runId: string
  /** The conversation the run belongs to (`RunRecord.threadId`). Required. */
  threadId: string
  /**
   * Stops the pump. An abort whose reason is core's `RUN_CANCEL_REASON`, or
   * one on a record with `cancelRequested`, is a cancel: the record becomes
   * `'aborted'`. Any other abort is a disconnect: the record stays
   * `'running'` for a takeover. Pass the signal `chat()` is aborted with.
   */
  signal?: AbortSignal
  /** Receives every store, log and stream failure on `errors` (and a `threadId` mismatch on `warn`). */
  logger?: InternalLogger
}

const isObjectWith = (v: unknown, methods: ReadonlyArray<string>): boolean =>
  typeof v === 'object' && v !== null && methods.every((m) => typeof (v as Record<string, unknown>)[m] === 'function')

/** zod checks shared with `RunController` (internal): a `RunStore`, an `InternalLogger`, ids, a signal, a stream. */
export const runStoreSchema = z.custom<RunStore>((v) => isObjectWith(v, ['createOrResume', 'update', 'get']), {
  message: "expected a RunStore (createOrResume, update, get), e.g. new InMemoryRunStore() from '@tanstack/ai'",
})
/** A run id that keeps the run-id rule (`runIdProblem`): refused here, before any record, log or journal exists under it. */
export const runIdSchema = z.string('expected the run id as a string').superRefine((value, ctx) => {
  const problem = runIdProblem(value, 'the run id')
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem })
})
export const threadIdSchema = z.string('expected the run record threadId as a string; it is required').min(1, 'expected a non-empty threadId')
export const signalSchema = z.instanceof(AbortSignal, { message: 'expected an AbortSignal' }).optional()
export const streamSchema = z.custom<AsyncIterable<StreamChunk>>((v) => typeof v === 'object' && v !== null && typeof (v as Record<symbol, unknown>)[Symbol.asyncIterator] === 'function', {
  message: 'expected an AsyncIterable<StreamChunk>, e.g. the stream chat() returns',
})

const optionsSchema = z
  .object({
    runs: runStoreSchema,
    durability: z.custom<StreamDurability>((v) => isObjectWith(v, ['append', 'close']), { message: 'expected the run event log: a StreamDurability with append() and close(), e.g. memoryStream({ runId })' }),
    runId: runIdSchema,
    threadId: threadIdSchema,
    signal: signalSchema,
    logger: loggerSchema,
  })
  .strict()

/**
 * Pump a `chat()` stream into a run's event log and record, and settle the
 * record. Every chunk is appended once, in order (chunks that arrive while an
 * append is in flight go in the next one, up to 32); a failed append is never
 * retried, since a retry could store a chunk twice, and it ends the run. The
 * terminal status comes from how the stream ended:
 *
 * | the stream                                   | record                                          | appended to the log                 |
 * | -------------------------------------------- | ----------------------------------------------- | ----------------------------------- |
 * | ends, last terminal chunk `RUN_FINISHED`     | `completed`, `finishedAt`, that chunk's `usage`  | nothing                             |
 * | ends, `RUN_FINISHED` with an interrupt outcome | `interrupted` (not terminal, no `finishedAt`) | nothing                             |
 * | ends, last terminal chunk `RUN_ERROR`        | `failed`, `finishedAt`, `error { message, code }` | nothing                           |
 * | ends, cancel requested, last terminal chunk a `RUN_ERROR` or a tool-calling turn's `RUN_FINISHED` | `aborted`, `finishedAt` | nothing |
 * | ends with no terminal chunk                  | `failed`, code `stream-ended-without-terminal`  | a `RUN_ERROR` saying so             |
 * | ends with no terminal chunk, cancel requested | `aborted`, `finishedAt`                        | `RUN_ERROR` `aborted`               |
 * | throws                                       | `failed`, the error's `message` / `code`        | a `RUN_ERROR` with the same         |
 * | an append fails                              | `failed`, code `run-log-append-failed`          | a `RUN_ERROR` (attempted)           |
 * | `signal` aborts, cancel requested            | `aborted`, `finishedAt`                         | `RUN_ERROR` `aborted`               |
 * | `signal` aborts, no cancel (a disconnect)    | unchanged (`running`)                           | nothing                             |
 * | ends unfinished, `withSandbox` detached the run (its `chat()` aborted with no cancel) | unchanged (`running`), the log left open | nothing |
 *
 * An agent loop emits one `RUN_FINISHED` per model turn, so only the LAST
 * terminal chunk counts, once the stream has ended. A cancel is either band
 * core defines: the abort reason is `RUN_CANCEL_REASON`, or
 * `wasCancelRequested(runs, runId)` (the record's `cancelRequested`). The log
 * is closed (`close()`) on every path, after the record is written, so a
 * tailer that sees the end finds the record settled. A run this call creates
 * opens its log with core's `run.accepted` marker (`RUN_ACCEPTED_EVENT`), as
 * `toServerSentEventsResponse` does, so a from-start attach finds a chunk at
 * once while the stream is still booting a sandbox. A record that is already
 * terminal is not driven: the stream is not read, the error is logged.
 *
 * @param stream - The run's chunks, usually `chat()`'s stream.
 * @param options - {@link PipeToRunLogOptions}.
 * @returns The record as the store holds it afterwards (`runs.get`), or `null` when the store has none or cannot be read. Never rejects.
 * @throws SandboxConfigError `invalid-option` (synchronously, before anything runs) when an option is missing or of the wrong type, e.g. no `threadId`.
 * @example
 * ```ts
 * const runs = new InMemoryRunStore()
 * const record = await pipeToRunLog(chat({ adapter, messages, threadId, runId }), { runs, durability: memoryStream({ runId }), runId, threadId })
 * record?.status // 'completed'
 * ```
 */
export function pipeToRunLog<TOffset extends string = string>(stream: AsyncIterable<StreamChunk>, options: PipeToRunLogOptions<TOffset>): Promise<RunRecord | null> {
  parseOptions(streamSchema, stream, 'pipeToRunLog.stream')
  parseOptions(optionsSchema, options, 'pipeToRunLog')
  const { durability, ...run } = options
  return driveRunLog(stream, run, () => durability)
}

/** What {@link driveRunLog} needs besides the stream and the log. */
export interface RunLogTarget {
  runs: RunStore
  runId: string
  threadId: string
  signal?: AbortSignal | undefined
  logger?: InternalLogger | undefined
  /** The run's end the log already holds (a takeover of a run whose end was delivered): counts as the last terminal chunk until the stream yields one. */
  storedEnd?: StreamChunk | undefined
}

/**
 * The body of {@link pipeToRunLog}, for callers that resolve the log lazily
 * (`RunController`'s per-run factory): a throwing `openLog` fails the run
 * (code `run-log-unavailable`) without reading the stream. Options are not
 * validated here. Never rejects.
 */
export async function driveRunLog<TOffset extends string>(stream: AsyncIterable<StreamChunk>, target: RunLogTarget, openLog: () => StreamDurability<TOffset>): Promise<RunRecord | null> {
  const report = reporter(target.logger, target.runId)
  try {
    return await drive(stream, target, openLog, report)
  } catch (error) {
    // Every call above is guarded; this is the last line of totality, for a bug in the driver itself.
    report.error('the run driver failed unexpectedly', error)
    return null
  }
}

async function drive<TOffset extends string>(stream: AsyncIterable<StreamChunk>, target: RunLogTarget, openLog: () => StreamDurability<TOffset>, report: Reporter): Promise<RunRecord | null> {
  const { runs, runId, threadId, signal } = target
  const startedAt = Date.now()

  // Whether this call creates the run: read first, since a record created by someone else in the same ms would have the same startedAt.
  const existing = await guard(report, 'reading the run record failed', () => runs.get(runId))
  const opened = await guard(report, 'creating the run record failed', () => runs.createOrResume({ runId, threadId, startedAt, status: 'running' }))
  const record = opened.ok ? opened.value : undefined
  if (record && record.threadId !== threadId) {
    report.warn(`run ${runId} belongs to thread ${record.threadId}, not ${threadId}; the record keeps its own`)
  }

  if (record && isTerminalRunStatus(record.status)) {
    report.error(`run ${runId} is already ${record.status}; not driving it again (a runId must be unique per run)`)
    await closeStream(stream, report)
    const stale = await guard(report, 'resolving the run log failed', openLog)
    if (stale.ok) await guard(report, 'closing the run log failed', () => stale.value.close())
    return record
  }

  const logOpened = await guard(report, 'resolving the run log failed', openLog)
  if (!logOpened.ok) {
    await closeStream(stream, report)
    const { patch } = decideOutcome({ kind: 'log-unavailable', error: logOpened.error }, false)
    if (patch) await guard(report, 'recording the terminal status failed', () => runs.update(runId, patch))
    return readBack(runs, runId, report)
  }
  const log = logOpened.value
  if (record?.status === 'interrupted') await guard(report, 'marking the resumed run running failed', () => runs.update(runId, { status: 'running' }))

  const writer = new LogWriter(log, report)
  if (record && existing.ok && existing.value === null && record.startedAt === startedAt && record.status === 'running') writer.push({ type: EventType.CUSTOM, name: RUN_ACCEPTED_EVENT, value: {}, timestamp: startedAt })
  const detach = listenForRunDetach(runId)
  let end: PumpEnd
  try {
    end = await pump(stream, writer, signal, report, target.storedEnd)
  } finally {
    detach.dispose()
  }
  await writer.settled()
  // withSandbox detached the run (its chat() was aborted with no cancel: this host is going away) and the stream ended
  // without the run's end: a disconnect. The record stays running and the log open for the host that takes it over.
  if (end.kind === 'ended' && !isFinalFinish(end.lastTerminal) && detach.detached() && !(await isCancelled(runs, runId, signal))) {
    return readBack(runs, runId, report)
  }
  // An append that failed after the stream ended lost the run's tail: it cannot count as completed.
  if (writer.failure && end.kind === 'ended') end = { kind: 'log-failed', error: writer.failure.error, lastTerminal: end.lastTerminal }

  const cancelled = end.kind === 'aborted' || (end.kind === 'ended' && !isFinalFinish(end.lastTerminal)) ? await isCancelled(runs, runId, signal) : false
  const outcome = decideOutcome(end, cancelled)
  if (outcome.chunk) await guard(report, 'appending the terminal RUN_ERROR failed', () => log.append([outcome.chunk!]))
  if (outcome.patch) await guard(report, 'recording the terminal status failed', () => runs.update(runId, outcome.patch!))
  await guard(report, 'closing the run log failed', () => log.close())
  return readBack(runs, runId, report)
}

/** Pull the stream into `writer` until it ends, throws, `signal` aborts or an append fails. Never rejects. */
async function pump(stream: AsyncIterable<StreamChunk>, writer: LogWriter, signal: AbortSignal | undefined, report: Reporter, storedEnd: StreamChunk | undefined): Promise<PumpEnd> {
  let lastTerminal: StreamChunk | undefined = storedEnd
  let iterator: AsyncIterator<StreamChunk>
  try {
    iterator = stream[Symbol.asyncIterator]()
  } catch (error) {
    return { kind: 'threw', error, lastTerminal }
  }
  const abort = abortPromise(signal)
  try {
    for (;;) {
      if (signal?.aborted) {
        await finishIterator(iterator, report)
        return { kind: 'aborted', lastTerminal }
      }
      if (writer.failure) {
        await finishIterator(iterator, report)
        return { kind: 'log-failed', error: writer.failure.error, lastTerminal }
      }
      if (writer.backlog >= MAX_APPEND_BATCH) {
        await writer.settled()
        continue
      }
      const next = iterator.next()
      const step = signal ? await Promise.race([next, abort.promise]) : await next
      if (step === ABORTED) {
        // A pull is still pending: its chunk is dropped, and `return()` runs once the stream yields it.
        next.catch(() => {})
        void Promise.resolve()
          .then(() => iterator.return?.())
          .catch((error: unknown) => report.error('closing the stream after the abort failed', error))
        return { kind: 'aborted', lastTerminal }
      }
      // A stream that ends once `signal` aborted ended BECAUSE of the abort (chat() returns quietly on one):
      // a RUN_FINISHED it emitted earlier closed a model turn, not the run.
      if (step.done) return { kind: signal?.aborted ? 'aborted' : 'ended', lastTerminal }
      const chunk = step.value
      writer.push(withoutBatchHint(chunk))
      if (chunk.type === 'RUN_FINISHED' || chunk.type === 'RUN_ERROR') {
        lastTerminal = chunk
        // Stored before the stream is asked for more, as core's producer does: the run's teardown (withSandbox's
        // terminal hooks run on that next pull) may then destroy the sandbox and its journal.
        await writer.settled()
      }
    }
  } catch (error) {
    return signal?.aborted ? { kind: 'aborted', lastTerminal } : { kind: 'threw', error, lastTerminal }
  } finally {
    abort.dispose()
  }
}

/** Either cancel band: the abort reason is `RUN_CANCEL_REASON`, or the record says `cancelRequested` (core's `wasCancelRequested`, which never rejects). */
async function isCancelled(runs: RunStore, runId: string, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted && typeof signal.reason === 'string' && isCancelRequestedReason(signal.reason)) return true
  return wasCancelRequested(runs, runId)
}

const ABORTED = Symbol('aborted')

/** A promise that resolves to {@link ABORTED} when `signal` aborts, and the listener's removal. */
function abortPromise(signal: AbortSignal | undefined): { promise: Promise<typeof ABORTED>; dispose: () => void } {
  if (!signal) return { promise: new Promise(() => {}), dispose: () => {} }
  let onAbort = (): void => {}
  const promise = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED)
    if (signal.aborted) resolve(ABORTED)
    else signal.addEventListener('abort', onAbort, { once: true })
  })
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) }
}

/** `return()` on an iterator with no pull pending (what a `for await` `break` does), guarded. */
async function finishIterator(iterator: AsyncIterator<StreamChunk>, report: Reporter): Promise<void> {
  try {
    await iterator.return?.()
  } catch (error) {
    report.error('closing the stream failed', error)
  }
}

/** Release a stream that is not going to be read (an unstarted generator's body never runs). */
async function closeStream(stream: AsyncIterable<StreamChunk>, report: Reporter): Promise<void> {
  try {
    await finishIterator(stream[Symbol.asyncIterator](), report)
  } catch (error) {
    report.error('closing the stream failed', error)
  }
}

async function readBack(runs: RunStore, runId: string, report: Reporter): Promise<RunRecord | null> {
  const read = await guard(report, 'reading the run record back failed', () => runs.get(runId))
  return read.ok ? (read.value ?? null) : null
}

/**
 * The chunk as core's durable producer stores it: without the
 * `metadata.tanstack.batch` hint `emitCustomEvent(..., { batch: true })`
 * leaves on it. A copy when there is a hint; `chunk` is never changed.
 */
function withoutBatchHint(chunk: StreamChunk): StreamChunk {
  const tanstack = (chunk as { metadata?: { tanstack?: Record<string, unknown> } }).metadata?.tanstack
  if (tanstack?.batch !== true) return chunk
  const { metadata, ...rest } = chunk as StreamChunk & { metadata: Record<string, unknown> }
  const { batch: _batch, ...keptTanstack } = tanstack
  const { tanstack: _tanstack, ...keptMetadata } = metadata
  const nextMetadata = Object.keys(keptTanstack).length > 0 ? { ...keptMetadata, tanstack: keptTanstack } : keptMetadata
  return (Object.keys(nextMetadata).length > 0 ? { ...rest, metadata: nextMetadata } : rest) as StreamChunk
}

