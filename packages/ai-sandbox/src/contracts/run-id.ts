/**
 * The one rule for run ids, checked at every boundary that takes one (the
 * durable entry points, the run stores and streams, the journal, the docs'
 * routes) before anything is created under the id. Pure; no I/O.
 * Invariant: every store and the journal accept exactly the ids
 * {@link isValidRunId} accepts, so no id can be stored that cannot be journaled.
 */
import { SandboxError, type SandboxErrorOptions } from './errors.js'

/** The longest run id accepted, in UTF-16 code units (its journal path stays under Linux's `PATH_MAX`). */
export const MAX_RUN_ID_LENGTH = 512

/** The index of the first C0 control (CR, LF and NUL among them), DEL or C1 control in `id`, or -1. */
function firstControl(id: string): number {
  for (let i = 0; i < id.length; i++) {
    const code = id.charCodeAt(i)
    if (code <= 0x1f || (code >= 0x7f && code <= 0x9f)) return i
  }
  return -1
}
/** With the `u` flag a surrogate range matches only a surrogate that is not half of a pair. */
const LONE_SURROGATE = /[\ud800-\udfff]/u

/**
 * Thrown for a run id that breaks the run-id rule ({@link assertValidRunId}).
 * `reason` is always `invalid-run-id`, the same reason the journal's and the
 * SQLite and PostgreSQL streams' errors use, so one check covers every store.
 *
 * @example
 * ```ts
 * try { assertValidRunId(runId) } catch (error) { if (InvalidRunIdError.isInstance(error)) return new Response(error.message, { status: 400 }) }
 * ```
 */
export class InvalidRunIdError extends SandboxError<'invalid-run-id'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/InvalidRunIdError'
  /** Where the id came from, as the caller names it (`runId`, `RunStore.createOrResume.runId`, `?runId`). */
  readonly field: string

  constructor(field: string, message: string, options?: SandboxErrorOptions) {
    super('invalid-run-id', message, options)
    this.field = field
  }
}

/**
 * Why `runId` breaks the run-id rule, or `undefined` when it keeps it. The
 * rule: a string of 1 to {@link MAX_RUN_ID_LENGTH} UTF-16 code units, well-formed
 * UTF-16 (no lone surrogate) and free of control characters (C0, DEL, C1).
 * Source: issue 27 (one run-id rule at the boundary).
 *
 * @param runId - The candidate id, of any type.
 * @param field - How the message names the id (default `runId`).
 * @returns A sentence naming the field, the fault and the fix; `undefined` for a valid id.
 * @example
 * ```ts
 * runIdProblem('run-7') // undefined
 * runIdProblem('a\nb') // 'runId holds a control character …'
 * ```
 */
export function runIdProblem(runId: unknown, field = 'runId'): string | undefined {
  const fix = 'Use a UUID (crypto.randomUUID()) or another printable id.'
  if (typeof runId !== 'string') return `${field} must be a string; got ${typeof runId}. ${fix}`
  if (runId.length === 0) return `${field} must not be empty. ${fix}`
  if (runId.length > MAX_RUN_ID_LENGTH) return `${field} may be at most ${MAX_RUN_ID_LENGTH} UTF-16 code units; got ${runId.length}. ${fix}`
  if (LONE_SURROGATE.test(runId)) return `${field} is not well-formed UTF-16 (it holds a lone surrogate), so stores would not keep it as given. ${fix}`
  const at = firstControl(runId)
  if (at !== -1) return `${field} holds the control character U+${runId.charCodeAt(at).toString(16).padStart(4, '0').toUpperCase()} at index ${at} (CR, LF, NUL and other controls break log lines, headers and stores). ${fix}`
  return undefined
}

/**
 * Whether `runId` keeps the run-id rule (see {@link runIdProblem}).
 *
 * @param runId - The candidate id, of any type.
 * @returns `true` for a string of 1 to 512 code units, well-formed, without control characters.
 * @example
 * ```ts
 * if (!isValidRunId(url.searchParams.get('runId'))) return new Response('bad runId', { status: 400 })
 * ```
 */
export function isValidRunId(runId: unknown): runId is string {
  return runIdProblem(runId) === undefined
}

/**
 * Throw unless `runId` keeps the run-id rule (see {@link runIdProblem}).
 * Call it where an id enters (a route's `?runId`, a store method) before
 * anything is created under it.
 *
 * @param runId - The candidate id, of any type.
 * @param field - How the error names the id (default `runId`).
 * @throws InvalidRunIdError `invalid-run-id`, its message naming the field and the fix.
 * @example
 * ```ts
 * assertValidRunId(request.headers.get('X-Run-Id'), 'X-Run-Id')
 * ```
 */
export function assertValidRunId(runId: unknown, field = 'runId'): asserts runId is string {
  const problem = runIdProblem(runId, field)
  if (problem !== undefined) throw new InvalidRunIdError(field, problem)
}
