/**
 * Replay alignment: makes a takeover's re-read of the journal from byte 0
 * idempotent by checking the replay against the run's log (`snapshot()`,
 * `chunkFingerprint`) and yielding only what lies past it. Never writes the
 * log. Invariant: nothing already logged is yielded, and a mismatching replay
 * throws. Design notes: docs/design/durability.md
 */
import type { StreamChunk, StreamDurability } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import { SandboxError } from '../contracts/errors.js'
import { parseOptions } from '../contracts/validate.js'
import { chunkFingerprint, chunkFingerprintIgnoringThreadId, chunkThreadId, sameChunk } from './chunk-identity.js'

/**
 * How many stored chunks in a row alignment may skip as out-of-band before it
 * gives up (64). The bound keeps the skip a tolerance for bursts of live
 * bridged-tool events, not a forward search that could match a chunk by
 * chance after a real divergence. Source: spec 004, `align.ts`.
 */
export const DEFAULT_MAX_OUT_OF_BAND_SKIP = 64

/** What {@link JournalReplayDivergedError.replayed} holds when the replay ended before the stored log did. */
const END_OF_REPLAY = '<end of replay>'

/** Longest fingerprint quoted in an error message, in characters (the error's fields keep the whole string). */
const MESSAGE_FINGERPRINT_CHARS = 400

// The out-of-band predicate for the adapters that splice live bridged-tool events into their output (any
// `CUSTOM` chunk) is the tool bridge's own; re-exported here because alignment is what it exists for.
export { isBridgeCustomChunk } from '../bridge/bridge-events.js'

/**
 * Why a replay failed to reproduce the log: `diverged` (a different chunk at
 * `index`), `thread-id-mismatch` (the same chunk except its `threadId`, see
 * {@link JournalReplayThreadIdMismatchError}), `replay-too-short` (the replay
 * ended while the log still held chunks it never reproduced; `replayed` is
 * `'<end of replay>'`).
 */
export type JournalReplayDivergedReason = 'diverged' | 'thread-id-mismatch' | 'replay-too-short'

/**
 * Thrown by {@link alignToStoredLog} when the replay does not reproduce the
 * stored log: translation stopped being deterministic (a `genId` that is not
 * run-scoped, a translator reading the clock) or the journal was rewritten,
 * most often by a reused `runId`. A bug to fix, not a condition to recover
 * from: the log already went to the client, so forwarding past the mismatch
 * would deliver a stream whose prefix and suffix disagree. Log the index and
 * both fingerprints, let the run fail, check `runId` uniqueness first.
 *
 * @example
 * ```ts
 * if (error instanceof JournalReplayDivergedError) log(error.index, error.stored, error.replayed)
 * ```
 */
export class JournalReplayDivergedError extends SandboxError<JournalReplayDivergedReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/JournalReplayDivergedError'
  /** Position in the stored log (0-based) of the first chunk the replay did not reproduce. */
  readonly index: number
  /** Fingerprint of the stored chunk at `index`. */
  readonly stored: string
  /** Fingerprint of the replayed chunk compared with it, or `'<end of replay>'` for `replay-too-short`. */
  readonly replayed: string

  /**
   * @param index - 0-based position in the stored log.
   * @param stored - The stored chunk's fingerprint.
   * @param replayed - The replayed chunk's fingerprint.
   * @param options.reason - Default `'diverged'`.
   * @param options.message - Replaces the generated message (subclasses use it).
   */
  constructor(index: number, stored: string, replayed: string, options: { reason?: JournalReplayDivergedReason; message?: string; cause?: unknown } = {}) {
    const reason = options.reason ?? 'diverged'
    super(reason, options.message ?? divergedMessage(reason, index, stored, replayed), options)
    this.index = index
    this.stored = stored
    this.replayed = replayed
  }
}

/**
 * The replay reproduced the stored chunk exactly except for its `threadId`:
 * the agent behaved the same, but the attaching `chat()` minted a new thread
 * id instead of reusing the run record's. Fix the attach route (pass
 * `RunRecord.threadId` into `chat({ threadId })`), not the translator. A
 * subclass of {@link JournalReplayDivergedError}, so code that handles the
 * general case keeps working; check this class first to separate a
 * configuration mistake from a determinism bug.
 *
 * @example
 * ```ts
 * if (error instanceof JournalReplayThreadIdMismatchError) return 'pass the run record threadId'
 * ```
 */
export class JournalReplayThreadIdMismatchError extends JournalReplayDivergedError {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/JournalReplayThreadIdMismatchError'
  declare readonly reason: 'thread-id-mismatch'
  /** `threadId` of the stored chunk. */
  readonly storedThreadId: string | undefined
  /** `threadId` of the replayed chunk. */
  readonly replayedThreadId: string | undefined

  constructor(index: number, stored: string, replayed: string, storedThreadId: string | undefined, replayedThreadId: string | undefined) {
    super(index, stored, replayed, {
      reason: 'thread-id-mismatch',
      message:
        `Journal replay diverged at index ${index} only by threadId: stored ${JSON.stringify(storedThreadId)}, replayed ${JSON.stringify(replayedThreadId)}. ` +
        `Every other field is identical, so the agent did not behave differently: the attaching run generated a new threadId instead of reusing the run record's. ` +
        `Pass the run record's threadId (RunRecord.threadId, which sandboxRunDriver hands to drive({ runId, threadId, signal })) into chat({ threadId }) on the attach route.`,
    })
    this.storedThreadId = storedThreadId
    this.replayedThreadId = replayedThreadId
  }
}

/** Options of {@link alignToStoredLog}. */
export interface AlignToStoredLogOptions<TOffset extends string = string> {
  /**
   * The run's event log. Only `snapshot()` is called, exactly once; the log
   * is never written. A full `StreamDurability` (e.g. `memoryStream({ runId })`)
   * fits, and so does any view that offers `snapshot`.
   */
  durability: Pick<StreamDurability<TOffset>, 'snapshot'>
  /** Receives one summary line on the `provider` category when the replay ends (suppressed, skipped, forwarded counts). */
  logger?: InternalLogger
  /**
   * True for a STORED chunk the replay cannot reproduce, which alignment then
   * skips (suppressed, not re-yielded: the client already has it) instead of
   * throwing. Never applied to replayed chunks. Absent by default: strict
   * positional comparison. Pass `isBridgeCustomChunk` on a harness
   * attach path whose adapter splices bridged-tool events into its output.
   */
  isOutOfBand?: (chunk: StreamChunk) => boolean
  /**
   * Most stored chunks skipped as out-of-band in a row; a match resets the
   * count. Trailing out-of-band chunks after the replay's end are not
   * bounded. Non-negative integer, default {@link DEFAULT_MAX_OUT_OF_BAND_SKIP}
   * (64). Ignored without `isOutOfBand`.
   */
  maxOutOfBandSkip?: number
}

const optionsSchema = z
  .object({
    durability: z.custom<AlignToStoredLogOptions['durability']>((v) => typeof v === 'object' && v !== null && typeof (v as { snapshot?: unknown }).snapshot === 'function', {
      message: 'expected the run event log: an object with a snapshot() method, e.g. memoryStream({ runId })',
    }),
    logger: z.custom<InternalLogger>((v) => typeof v === 'object' && v !== null && typeof (v as { provider?: unknown }).provider === 'function', { message: "expected chat()'s InternalLogger (an object with a provider(message) method)" }).optional(),
    isOutOfBand: z.custom<(chunk: StreamChunk) => boolean>((v) => typeof v === 'function', { message: 'expected a predicate (chunk) => boolean, e.g. isBridgeCustomChunk' }).optional(),
    maxOutOfBandSkip: z.number().int('expected a whole number of chunks').min(0, 'expected 0 or more chunks').optional(),
  })
  .strict()

/**
 * Suppress the replayed chunks the run's event log already holds and yield
 * the rest. The log is read once, with `snapshot()` (bounded: `read()` tails
 * and never ends on a log whose producer died), before the first replayed
 * chunk is pulled; chunks the caller appends while alignment runs are never
 * mistaken for stored ones. Replayed chunk `i` is compared with stored chunk
 * `i` by {@link chunkFingerprint}; an out-of-band stored chunk is skipped
 * (see `isOutOfBand`). Decision per replayed chunk:
 *
 * | stored log at the cursor          | decision                                      |
 * | --------------------------------- | --------------------------------------------- |
 * | exhausted                         | yield (new output)                            |
 * | same fingerprint                  | suppress, advance                             |
 * | different, out-of-band, < bound   | skip the stored chunk, compare the next one   |
 * | different, otherwise              | throw {@link JournalReplayDivergedError}      |
 *
 * When the replay ends, stored chunks left over must all be out-of-band;
 * anything else throws `replay-too-short`.
 *
 * @param chunks - The replay: the journal re-translated from byte 0.
 * @param options - {@link AlignToStoredLogOptions}.
 * @returns The chunks past the stored log, in order.
 * @throws SandboxConfigError `invalid-option` for bad options, when called.
 * @throws JournalReplayDivergedError `diverged` / `replay-too-short`, while iterating.
 * @throws JournalReplayThreadIdMismatchError `thread-id-mismatch`, while iterating.
 * @example
 * ```ts
 * const durability = memoryStream({ runId })
 * for await (const chunk of alignToStoredLog(replay, { durability, isOutOfBand: isBridgeCustomChunk })) {
 *   await durability.append([chunk])
 * }
 * ```
 */
export function alignToStoredLog<TOffset extends string = string>(chunks: AsyncIterable<StreamChunk>, options: AlignToStoredLogOptions<TOffset>): AsyncIterable<StreamChunk> {
  parseOptions(optionsSchema, options, 'alignToStoredLog')
  return align(chunks, options)
}

async function* align<TOffset extends string>(chunks: AsyncIterable<StreamChunk>, options: AlignToStoredLogOptions<TOffset>): AsyncGenerator<StreamChunk> {
  const stored = await options.durability.snapshot()
  const { isOutOfBand, maxOutOfBandSkip = DEFAULT_MAX_OUT_OF_BAND_SKIP } = options
  let cursor = 0
  let suppressed = 0
  let skipped = 0
  let forwarded = 0

  for await (const chunk of chunks) {
    if (cursor >= stored.length) {
      forwarded += 1
      yield chunk
      continue
    }
    // Compared without building fingerprints on the common (matching) path; they are built only for an error.
    let skippedInARow = 0
    for (;;) {
      const entry = stored[cursor]?.chunk
      if (entry === undefined) {
        // Every stored chunk left was out-of-band: this one is new.
        forwarded += 1
        yield chunk
        break
      }
      if (sameChunk(entry, chunk)) {
        cursor += 1
        suppressed += 1
        break
      }
      if (isOutOfBand === undefined || !isOutOfBand(entry) || skippedInARow >= maxOutOfBandSkip) {
        throw divergence(cursor, entry, chunk)
      }
      cursor += 1
      skippedInARow += 1
      skipped += 1
    }
  }

  // The replay ended. Out-of-band chunks after the last translated one are expected (a bridged tool's last event);
  // any other leftover chunk was delivered by the log and is accounted for by nothing in the journal.
  for (; cursor < stored.length; cursor++) {
    const entry = stored[cursor]!.chunk
    if (isOutOfBand === undefined || !isOutOfBand(entry)) {
      const expected = chunkFingerprint(entry)
      throw new JournalReplayDivergedError(cursor, expected, END_OF_REPLAY, { reason: 'replay-too-short', message: tooShortMessage(cursor, stored.length, expected) })
    }
    skipped += 1
  }

  options.logger?.provider(`journal alignment: suppressed ${suppressed} stored chunk(s), skipped ${skipped} out-of-band, forwarded ${forwarded}`, { suppressed, skipped, forwarded })
}

/**
 * The error for a mismatch: the threadId-only subclass when the two chunks
 * are equal once `threadId` is left out, the general class otherwise.
 */
function divergence(index: number, storedChunk: StreamChunk, replayedChunk: StreamChunk): JournalReplayDivergedError {
  const stored = chunkFingerprint(storedChunk)
  const replayed = chunkFingerprint(replayedChunk)
  const storedThreadId = chunkThreadId(storedChunk)
  const replayedThreadId = chunkThreadId(replayedChunk)
  if (storedThreadId !== replayedThreadId && chunkFingerprintIgnoringThreadId(storedChunk) === chunkFingerprintIgnoringThreadId(replayedChunk)) {
    return new JournalReplayThreadIdMismatchError(index, stored, replayed, storedThreadId, replayedThreadId)
  }
  return new JournalReplayDivergedError(index, stored, replayed)
}

function divergedMessage(reason: JournalReplayDivergedReason, index: number, stored: string, replayed: string): string {
  const what = reason === 'replay-too-short' ? 'the replay ended before the stored log did' : 'the replay produced a different chunk than the stored log holds'
  return (
    `Journal replay diverged at index ${index}: ${what}. Stored ${quote(stored)}, replayed ${quote(replayed)}. ` +
    `Translation is no longer deterministic or the journal was rewritten: check that the runId is unique per run and that the translator's genId is createRunScopedIdGen(runId).`
  )
}

function tooShortMessage(index: number, storedLength: number, stored: string): string {
  return (
    `Journal replay diverged at index ${index}: the replay is shorter than the stored log, ${storedLength - index} stored chunk(s) from index ${index} were not reproduced (the first, ${quote(stored)}, is not out-of-band). ` +
    `The log already delivered chunks the journal no longer accounts for, usually because the journal was rewritten or the runId was reused.`
  )
}

function quote(fingerprint: string): string {
  return fingerprint.length <= MESSAGE_FINGERPRINT_CHARS ? fingerprint : `${fingerprint.slice(0, MESSAGE_FINGERPRINT_CHARS)}… (${fingerprint.length} chars)`
}
