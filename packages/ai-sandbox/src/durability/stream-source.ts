/**
 * Where a store's run log (`StreamDurability`) attaches, read the way core's
 * `memoryStream` reads it: the run id and the resume offset of an incoming
 * Request, or an explicit `{ runId, offset? }`, and the run-id rule (it must
 * fit a header and an SSE line). Pure: no I/O. Core 0.58.0
 * exports only the run-id half (`resolveResumeRunId`), which this reuses, so
 * a store and core's resume helpers never disagree about which run is meant.
 */
import { resolveResumeRunId } from '@tanstack/ai'
import { randomUUID } from 'node:crypto'
import { runIdProblem } from '../contracts/run-id.js'

/** A log attached without a Request: the run, and the offset a consumer resumes after (`null`: a producer). */
export interface StreamSourceInit {
  /** The run. Non-empty, no CR or LF. */
  runId: string
  /** The offset `resumeFrom()` returns: `'-1'` (from the start), `'now'` (only what comes next), or an offset the log returned. Default `null`. */
  offset?: string | null
}

/**
 * The resume offset a Request carries: its `Last-Event-ID` header, then its
 * `?offset` query parameter, else `null` (a producer). Core's `memoryStream`
 * reads it the same way; core's resume helpers answer 400 when it is `null`.
 *
 * @param request - The incoming request.
 * @returns The offset as sent (not validated), or `null`.
 * @example
 * ```ts
 * resolveResumeOffset(new Request('https://app.test/run?runId=r&offset=-1')) // '-1'
 * ```
 */
export function resolveResumeOffset(request: Request): string | null {
  const header = request.headers.get('Last-Event-ID')
  if (header) return header
  try {
    return new URL(request.url).searchParams.get('offset')
  } catch {
    return null
  }
}

/**
 * The run and resume offset a store's log for `source` attaches to: from a
 * Request, the run named by core's `resolveResumeRunId` (`X-Run-Id`, then
 * `?runId`; a fresh UUID when it names none, as `memoryStream` gives a new
 * producer) and {@link resolveResumeOffset}; from an init, its fields.
 *
 * @param source - The incoming Request, or `{ runId, offset? }`.
 * @param invalidRunId - Builds the error thrown for a run id that is empty or holds CR or LF (it would break an SSE line or a header), given the id and a message naming it. The rule is `assertValidRunId`'s (1 to 512 code units, well-formed UTF-16, no control characters).
 * @returns `{ runId, resumeOffset }`.
 * @throws what `invalidRunId` returns, for an invalid run id.
 * @example
 * ```ts
 * const { runId, resumeOffset } = resolveStreamSource(source, (id, message) => new MyStreamError('invalid-run-id', id, message))
 * ```
 */
export function resolveStreamSource(source: Request | StreamSourceInit, invalidRunId: (runId: string, message: string) => Error): { runId: string; resumeOffset: string | null } {
  const resumeOffset = source instanceof Request ? resolveResumeOffset(source) : (source.offset ?? null)
  const runId = source instanceof Request ? (resolveResumeRunId(source) ?? randomUUID()) : source.runId
  const problem = runIdProblem(runId, source instanceof Request ? 'the request\'s run id (X-Run-Id or ?runId)' : 'runId')
  if (problem !== undefined) throw invalidRunId(runId, problem)
  return { runId, resumeOffset }
}
