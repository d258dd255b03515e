/**
 * How a piped run ended, as a run record patch and, when the log lacks one, a
 * terminal `RUN_ERROR` chunk to append. Pure: no IO, the clock is a
 * parameter. Invariant: only a cancel writes `'aborted'`, and a disconnect
 * (an abort without a cancel) writes nothing, so the run stays `'running'`
 * for a takeover. Source: spec 000 "Edge / serverless execution",
 * core's `AbortInfo.cancelRequested`.
 */
import { EventType, fromSpecTokenUsage, type RunStore, type StreamChunk, type TokenUsage } from '@tanstack/ai'
import { toRunErrorPayload } from '@tanstack/ai/adapter-internals'

/** How `pipeToRunLog`'s pump stopped. `lastTerminal` is the last `RUN_FINISHED` / `RUN_ERROR` it saw. */
export type PumpEnd =
  | { kind: 'ended'; lastTerminal: StreamChunk | undefined }
  | { kind: 'aborted'; lastTerminal: StreamChunk | undefined }
  | { kind: 'threw'; error: unknown; lastTerminal: StreamChunk | undefined }
  | { kind: 'log-failed'; error: unknown; lastTerminal: StreamChunk | undefined }
  | { kind: 'log-unavailable'; error: unknown }

/** A `RunStore.update` patch. */
export type RunPatch = Parameters<RunStore['update']>[1]

/** What to write: a record patch (absent for a disconnect) and a terminal chunk (absent when the stream supplied one). */
export interface RunOutcome {
  patch?: RunPatch
  chunk?: StreamChunk
}

/**
 * Map how the pump ended to what the run record and the log get.
 *
 * @param end - How the pump stopped.
 * @param cancelled - Whether a cancel was requested (either band); read for `aborted` and for an `ended` stream whose last terminal chunk is not `RUN_FINISHED`.
 * @param now - Epoch ms for `finishedAt` and the chunk's `timestamp`.
 */
export function decideOutcome(end: PumpEnd, cancelled: boolean, now: number = Date.now()): RunOutcome {
  switch (end.kind) {
    case 'aborted':
      return cancelled ? abortedOutcome(now) : {}
    case 'threw':
      return failedWithChunk(toRunErrorPayload(end.error), now)
    case 'log-failed':
      return failedWithChunk({ message: `The run log refused an append, so the run was stopped: ${toRunErrorPayload(end.error).message}`, code: 'run-log-append-failed' }, now)
    case 'log-unavailable':
      return { patch: { status: 'failed', finishedAt: now, error: { message: `The run log could not be opened: ${toRunErrorPayload(end.error).message}`, code: 'run-log-unavailable' } } }
    case 'ended':
      return endedOutcome(end.lastTerminal, cancelled, now)
  }
}

/**
 * Whether `chunk` is the end of the agent's work: a `RUN_FINISHED` that is not
 * a tool-calling turn's (an agent loop runs another turn after one of those).
 * A stream that ended after anything else may have been cut short by a cancel.
 */
export function isFinalFinish(chunk: StreamChunk | undefined): boolean {
  return chunk?.type === EventType.RUN_FINISHED && chunk.finishReason !== 'tool_calls'
}

/**
 * The chunk that ended the run, when a stored log already holds it: the last
 * `RUN_FINISHED` / `RUN_ERROR` in `chunks`, if it is a `RUN_ERROR` or a final
 * `RUN_FINISHED` ({@link isFinalFinish}); otherwise `undefined` (the run is
 * not over in the log). A predecessor that delivered its run's end and died
 * before it settled the record leaves exactly this.
 */
export function storedRunEnd(chunks: readonly StreamChunk[]): StreamChunk | undefined {
  for (let i = chunks.length - 1; i >= 0; i--) {
    const chunk = chunks[i]!
    if (chunk.type === EventType.RUN_ERROR) return chunk
    if (chunk.type === EventType.RUN_FINISHED) return isFinalFinish(chunk) ? chunk : undefined
  }
  return undefined
}

function endedOutcome(last: StreamChunk | undefined, cancelled: boolean, now: number): RunOutcome {
  // Cut short by a cancel: after a tool-calling turn, or with the error the agent died of when its sandbox went.
  if (cancelled && !isFinalFinish(last)) return last?.type === EventType.RUN_ERROR || last?.type === EventType.RUN_FINISHED ? { patch: { status: 'aborted', finishedAt: now } } : abortedOutcome(now)
  if (last?.type === EventType.RUN_FINISHED) {
    // A human-in-the-loop pause: not terminal, no finishedAt, continued by interrupt-resume.
    if (last.outcome?.type === 'interrupt') return { patch: { status: 'interrupted' } }
    const usage = usageOf(last)
    return { patch: { status: 'completed', finishedAt: now, ...(usage ? { usage } : {}) } }
  }
  if (last?.type === EventType.RUN_ERROR) {
    const message = last.error?.message ?? last.message
    const code = last.error?.code ?? last.code
    return { patch: { status: 'failed', finishedAt: now, error: { message, ...(code !== undefined ? { code } : {}) } } }
  }
  return failedWithChunk({ message: 'The stream ended without a terminal event (RUN_FINISHED or RUN_ERROR).', code: 'stream-ended-without-terminal' }, now)
}

function abortedOutcome(now: number): RunOutcome {
  return { patch: { status: 'aborted', finishedAt: now }, chunk: runErrorChunk(toRunErrorPayload({ name: 'AbortError' }), now) }
}

function failedWithChunk(payload: { message: string; code?: string | undefined }, now: number): RunOutcome {
  const error = { message: payload.message, ...(payload.code !== undefined ? { code: payload.code } : {}) }
  return { patch: { status: 'failed', finishedAt: now, error }, chunk: runErrorChunk(error, now) }
}

/** A terminal `RUN_ERROR` in the shape core's durable producer appends for a failure. */
function runErrorChunk(error: { message: string; code?: string }, now: number): StreamChunk {
  return { type: EventType.RUN_ERROR, timestamp: now, message: error.message, ...(error.code !== undefined ? { code: error.code } : {}), error }
}

/** A `RUN_FINISHED`'s usage as TanStack `TokenUsage`: spec `usage[]` plus `metadata.tanstack.usage`, or TanStack usage as is. */
function usageOf(chunk: Extract<StreamChunk, { type: EventType.RUN_FINISHED }>): TokenUsage | undefined {
  const usage = chunk.usage
  if (usage !== undefined && !Array.isArray(usage)) return usage
  return fromSpecTokenUsage(usage, chunk.metadata?.tanstack?.usage)
}
