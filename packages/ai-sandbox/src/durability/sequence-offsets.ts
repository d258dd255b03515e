/**
 * The offsets of a gap-free run log that numbers its chunks `'0'`, `'1'`, …
 * (the SQLite and PostgreSQL stores): parsing one a client sent, and
 * validating an `upsert` batch against the log's tail before anything is
 * written, as core's `UpsertableStreamDurability` requires (dense, only
 * offsets the log mints, none repeated, all or nothing). Pure: the store
 * reads its tail and writes the plan in its own transaction.
 */
import type { StreamChunk } from '@tanstack/ai'

/**
 * The sequence number a 0-based integer offset names (`'0'`, `'1'`, …: no
 * sign, no leading zero, a safe integer), or `undefined` when `offset` is not
 * one.
 *
 * @param offset - An offset as a client sent it.
 * @returns The sequence number, or `undefined`.
 * @example
 * ```ts
 * parseSequenceOffset('12') // 12
 * parseSequenceOffset('012') // undefined
 * ```
 */
export function parseSequenceOffset(offset: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(offset)) return undefined
  const seq = Number(offset)
  return Number.isSafeInteger(seq) ? seq : undefined
}

/** One step of an upsert: replace the chunk stored at `seq`, or store a new one there. */
export interface SequenceUpsertStep {
  /** The sequence number. */
  seq: number
  /** The chunk to store. */
  chunk: StreamChunk
  /** `true`: `seq` is stored and its chunk is replaced; `false`: `seq` is the next offset and is appended. */
  stored: boolean
}

/**
 * Validate a whole `upsert` batch of a gap-free log whose last stored
 * sequence number is `tail` (`-1`: nothing stored), and plan it: an entry at a
 * stored offset replaces its chunk, a new one must come right after the tail
 * (or the batch's previous new entry). Throws before returning anything, so a
 * refused batch writes nothing.
 *
 * @param entries - The batch as the caller passed it (a hole is refused).
 * @param tail - The last stored sequence number, read in the transaction that writes the plan; `-1` when none.
 * @param refuse - Builds the error thrown for a refused batch, given a message naming the entry and the rule.
 * @returns One step per entry, in order.
 * @throws what `refuse` returns: a hole, an offset the log does not mint, one repeated in the batch, a new one that is not next.
 * @example
 * ```ts
 * const plan = planSequenceUpsert(entries, tail, (message) => new MyStreamError('invalid-upsert', runId, message))
 * ```
 */
export function planSequenceUpsert(entries: ReadonlyArray<{ chunk: StreamChunk; offset: string }>, tail: number, refuse: (message: string) => Error): SequenceUpsertStep[] {
  let planned = tail
  const seen = new Set<number>()
  return Array.from(entries, (entry, index) => {
    if (entry === undefined) throw refuse(`upsert: entries[${index}] is missing; entries must be dense.`)
    const at = `upsert: entries[${index}].offset ${JSON.stringify(entry.offset)}`
    const seq = parseSequenceOffset(entry.offset)
    if (seq === undefined) throw refuse(`${at} is not an offset this log mints (a non-negative integer as a string).`)
    if (seen.has(seq)) throw refuse(`${at} is repeated within the batch; each offset may appear at most once.`)
    seen.add(seq)
    if (seq <= tail) return { seq, chunk: entry.chunk, stored: true }
    if (seq !== planned + 1) throw refuse(`${at} is not stored yet and is not the next offset ${planned + 1}; a new entry must come right after the tail.`)
    planned = seq
    return { seq, chunk: entry.chunk, stored: false }
  })
}
