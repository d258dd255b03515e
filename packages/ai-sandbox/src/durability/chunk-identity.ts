/**
 * Chunk identity for replay alignment: when two `StreamChunk`s count as "the
 * same chunk". A fingerprint is canonical JSON (object keys sorted at every
 * depth) of the whole chunk minus its top-level `timestamp`, the one field a
 * re-translation cannot reproduce. This module owns no I/O and no state.
 * Invariant: two chunks that differ in any field other than the top-level
 * `timestamp` (nested tool-call arguments included) never share a fingerprint.
 */
import type { StreamChunk } from '@tanstack/ai'

/** Top-level fields left out of {@link chunkFingerprint}. */
const WITHOUT_TIMESTAMP: ReadonlySet<string> = new Set(['timestamp'])

/** Top-level fields left out of {@link chunkFingerprintIgnoringThreadId}. */
const WITHOUT_TIMESTAMP_AND_THREAD: ReadonlySet<string> = new Set(['timestamp', 'threadId'])

/**
 * The identity of a chunk as alignment compares it: canonical JSON of the
 * chunk with object keys sorted at every depth and the top-level `timestamp`
 * left out (wall-clock time, which a replay cannot reproduce). Everything
 * else participates, nested tool-call arguments and a nested `timestamp`
 * included. Values follow `JSON.stringify`: an `undefined` property is the
 * same as an absent one, `toJSON` is honoured, a BigInt renders as its digits.
 *
 * @param chunk - Any stream chunk.
 * @returns A stable string; equal strings mean equal chunks. Not a hash: it
 *   is as long as the chunk's JSON.
 * @example
 * ```ts
 * chunkFingerprint({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'run-1-0', delta: 'hi', timestamp: 1 }) ===
 *   chunkFingerprint({ delta: 'hi', messageId: 'run-1-0', type: EventType.TEXT_MESSAGE_CONTENT, timestamp: 2 }) // true
 * ```
 */
export function chunkFingerprint(chunk: StreamChunk): string {
  return canonicalTop(chunk, WITHOUT_TIMESTAMP)
}

/**
 * {@link chunkFingerprint} with the top-level `threadId` left out as well.
 * Alignment uses it on the failure path only, to tell a replay that moved
 * nothing but its `threadId` (a configuration mistake) from a real divergence.
 *
 * @param chunk - Any stream chunk.
 * @returns A stable string, as {@link chunkFingerprint}.
 * @example
 * ```ts
 * chunkFingerprintIgnoringThreadId({ ...started, threadId: 'a' }) === chunkFingerprintIgnoringThreadId({ ...started, threadId: 'b' }) // true
 * ```
 */
export function chunkFingerprintIgnoringThreadId(chunk: StreamChunk): string {
  return canonicalTop(chunk, WITHOUT_TIMESTAMP_AND_THREAD)
}

/**
 * The chunk's top-level `threadId` (carried by `RUN_STARTED`, `RUN_FINISHED`
 * and `RUN_ERROR`), or `undefined` when it has none or it is not a string.
 *
 * @param chunk - Any stream chunk.
 * @example
 * ```ts
 * chunkThreadId({ type: EventType.RUN_STARTED, runId: 'r', threadId: 't' }) // 't'
 * ```
 */
export function chunkThreadId(chunk: StreamChunk): string | undefined {
  const threadId = (chunk as { threadId?: unknown }).threadId
  return typeof threadId === 'string' ? threadId : undefined
}

/**
 * True when the two chunks have the same {@link chunkFingerprint}, computed
 * without building either string in the common case: a structural walk that
 * allocates nothing answers "equal" only when the chunks are plainly the same
 * (same keys, `===` leaves, plain objects and arrays only), and anything else
 * (a NaN, an `undefined` property, a `Date`) is settled by the fingerprints.
 * So the answer is always exactly `chunkFingerprint(a) === chunkFingerprint(b)`.
 * Internal to alignment, not part of the package's exports.
 */
export function sameChunk(a: StreamChunk, b: StreamChunk): boolean {
  return plainlyEqual(a, b, true) || chunkFingerprint(a) === chunkFingerprint(b)
}

/** Structural equality that may say `false` for fingerprint-equal values, but never `true` for different ones. */
function plainlyEqual(a: unknown, b: unknown, top: boolean): boolean {
  if (a === b) return true // the same value renders the same
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length || !isPlain(a) || !isPlain(b)) return false
    for (let i = 0; i < a.length; i++) if (!plainlyEqual(a[i], b[i], false)) return false
    return true
  }
  if (Array.isArray(b) || !isPlain(a) || !isPlain(b)) return false
  const left = a as Record<string, unknown>
  const right = b as Record<string, unknown>
  const keys = Object.keys(left)
  let extra = Object.keys(right).length - keys.length
  if (top) extra += (isOwnEnumerable(left, 'timestamp') ? 1 : 0) - (isOwnEnumerable(right, 'timestamp') ? 1 : 0)
  if (extra !== 0) return false
  for (const key of keys) {
    if (top && key === 'timestamp') continue
    if (!isOwnEnumerable(right, key) || !plainlyEqual(left[key], right[key], false)) return false
  }
  return true
}

const isOwnEnumerable = (value: object, key: string): boolean => Object.prototype.propertyIsEnumerable.call(value, key)

/** A plain object or array with no `toJSON`: its JSON is its own enumerable properties. */
function isPlain(value: object): boolean {
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false
  if (Array.isArray(value)) return true
  const proto = Object.getPrototypeOf(value) as unknown
  return proto === Object.prototype || proto === null
}

/** Canonical JSON of a chunk, leaving out the named top-level fields. */
function canonicalTop(chunk: StreamChunk, omit: ReadonlySet<string>): string {
  const value: unknown = chunk
  if (!isRecord(value)) return canonical(value) ?? 'null'
  return canonicalObject(value, omit)
}

const NOTHING: ReadonlySet<string> = new Set()

/** Canonical JSON of one value, or `undefined` where JSON has no value (undefined, functions, symbols). */
function canonical(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return JSON.stringify(value)
    case 'bigint':
      return value.toString()
    case 'object':
      if (value === null) return 'null'
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return canonical((value as { toJSON: () => unknown }).toJSON())
      if (Array.isArray(value)) return `[${value.map((item) => canonical(item) ?? 'null').join(',')}]`
      return canonicalObject(value as Record<string, unknown>, NOTHING)
    default:
      return undefined
  }
}

/** `{"a":…,"b":…}` with keys in code-unit order, undefined-valued keys dropped. */
function canonicalObject(value: Record<string, unknown>, omit: ReadonlySet<string>): string {
  const keys = Object.keys(value).sort()
  let out = ''
  for (const key of keys) {
    if (omit.has(key)) continue
    const rendered = canonical(value[key])
    if (rendered === undefined) continue
    out += `${out === '' ? '' : ','}${JSON.stringify(key)}:${rendered}`
  }
  return `{${out}}`
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
