/**
 * Run ids as journal file names: `encodeRunId` maps any valid run id to a path
 * safe in a shell word and on every filesystem; `decodeJournalRunId` maps it
 * back, failing closed on anything `encodeRunId` could not produce. Pure.
 * Invariant: the encoding is injective. Design notes: docs/design/journal.md
 */
import { runIdProblem } from '../contracts/run-id.js'
import { JournalError, MAX_JOURNAL_RUN_ID_LENGTH } from './errors.js'

/** Characters of one path component of an encoded run id (well under `NAME_MAX` with `.ndjson`). */
const SEGMENT_CHARS = 200

const LITERAL = /^[A-Za-z0-9-]$/
const ENCODED = /^(?:[A-Za-z0-9-]|_[0-9a-f]{4})+$/

/** What {@link decodeJournalRunId} returns: the run id, or why the name is not a journal of ours. */
export type DecodedJournalRunId = { readonly ok: true; readonly runId: string } | { readonly ok: false; readonly reason: string }

/**
 * Encode a run id as the journal's path relative to the journal folder, without
 * the `.ndjson` suffix. Injective (two ids never share a path), shell-safe
 * (only `A-Z a-z 0-9 - _ /`) and filename-safe (no `.`, no empty or over-long
 * component). Source: spec 003 (`encodeRunId`), 000 "Durable runs".
 *
 * @param runId - A run id that keeps the run-id rule (`assertValidRunId`): 1 to 512 UTF-16 code units, well-formed, no control characters.
 * @returns For example `run-7` for `run-7`, `a_002fb` for `a/b`.
 * @throws JournalError `invalid-run-id` for an id that breaks the run-id rule.
 * @example
 * ```ts
 * encodeRunId('3f2c-…') // '3f2c-…' (a UUID is its own name)
 * encodeRunId('../x') // '_002e_002e_002fx'
 * ```
 */
export function encodeRunId(runId: string): string {
  const problem = runIdProblem(runId, "a journal's runId")
  if (problem !== undefined) throw new JournalError('invalid-run-id', `${problem} Pass chat({ runId }) with a valid id.`, typeof runId === 'string' ? { runId } : {})
  let out = ''
  for (let i = 0; i < runId.length; i++) {
    const char = runId[i]!
    out += LITERAL.test(char) ? char : `_${runId.charCodeAt(i).toString(16).padStart(4, '0')}`
  }
  const segments: string[] = []
  for (let at = 0; at < out.length; at += SEGMENT_CHARS) segments.push(out.slice(at, at + SEGMENT_CHARS))
  return segments.join('/')
}

/**
 * Recover the run id from a journal's path relative to the journal folder, as
 * `journalListCommand` lists it (with or without the `.ndjson` suffix). Fails
 * closed: any name {@link encodeRunId} would not produce (a foreign file, an
 * upper-case escape, an escaped literal character, a folder split at the wrong
 * place) is `{ ok: false }`, never a guessed id. Source: spec 003.
 *
 * @param name - E.g. `run-7.ndjson` or `<200 characters>/<rest>.ndjson`.
 * @returns `{ ok: true, runId }` or `{ ok: false, reason }`.
 * @example
 * ```ts
 * decodeJournalRunId('a_002fb.ndjson') // { ok: true, runId: 'a/b' }
 * decodeJournalRunId('notes.txt') // { ok: false, reason: '…' }
 * ```
 */
export function decodeJournalRunId(name: string): DecodedJournalRunId {
  const stem = name.endsWith('.ndjson') ? name.slice(0, -'.ndjson'.length) : name
  const segments = stem.split('/')
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!
    const last = i === segments.length - 1
    if (segment === '' || (!last && segment.length !== SEGMENT_CHARS) || segment.length > SEGMENT_CHARS) {
      return { ok: false, reason: `${JSON.stringify(name)} is not split the way encodeRunId splits a long id` }
    }
  }
  const encoded = segments.join('')
  if (!ENCODED.test(encoded)) return { ok: false, reason: `${JSON.stringify(name)} holds characters encodeRunId never writes` }
  let runId = ''
  for (let i = 0; i < encoded.length; ) {
    if (encoded[i] !== '_') {
      runId += encoded[i]
      i += 1
      continue
    }
    const char = String.fromCharCode(Number.parseInt(encoded.slice(i + 1, i + 5), 16))
    if (LITERAL.test(char)) return { ok: false, reason: `${JSON.stringify(name)} escapes a character encodeRunId keeps as it is` }
    runId += char
    i += 5
  }
  if (runId.length > MAX_JOURNAL_RUN_ID_LENGTH) return { ok: false, reason: `${JSON.stringify(name)} decodes to a run id longer than ${MAX_JOURNAL_RUN_ID_LENGTH}` }
  // A lone surrogate or a control character: a name only a release without the run-id rule could have written.
  const problem = runIdProblem(runId)
  if (problem !== undefined) return { ok: false, reason: `${JSON.stringify(name)} decodes to a run id encodeRunId refuses (${problem})` }
  return { ok: true, runId }
}
