/**
 * The replay-determinism suite of an NDJSON harness adapter's translator: an
 * attaching host re-translates a run's journal from byte 0 and `alignToStoredLog`
 * compares what it gets with what the first host stored, chunk by chunk. This
 * module owns the journal framing (header line, the CLI's stdout, the exit
 * sentinel), the journal-reader cut and the checks; each adapter names its
 * CLI, its recorded scenarios and its translator.
 */
import { createHash, randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { chunkFingerprint, createRunScopedIdGen, exitSentinelLine, journalHeaderLine, parseExitSentinel, toJournalLines } from '@tanstack/ai-sandbox'
import type { ReplayOptions } from './harness-recordings.js'

const RUN_ID = 'run-journal-7'
const NONCE = 'b7d0c5a1e2f34a6b8c9d0e1f2a3b4c5d'

/** The recording as the journal holds it: header, the CLI's stdout, the genuine exit sentinel. */
function journalBytes(stdout: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${journalHeaderLine(NONCE)}\n`), stdout, Buffer.from(`${exitSentinelLine(0, NONCE)}\n`)])
}

/** Read journal bytes the way a journal reader does (pieces of `pieceBytes`), up to the genuine sentinel; the CLI's events parsed. */
async function journalEvents(bytes: Buffer, pieceBytes: number): Promise<{ events: unknown[]; exitCode?: number }> {
  async function* pieces() {
    for (let at = 0; at < bytes.length; at += pieceBytes) yield bytes.subarray(at, at + pieceBytes)
  }
  const header = { nonceHash: createHash('sha256').update(NONCE).digest('hex') }
  const events: unknown[] = []
  let first = true
  for await (const { line } of toJournalLines(pieces(), 0)) {
    if (first) {
      first = false // the header
      continue
    }
    const exit = parseExitSentinel(line, header)
    if (exit) return { events, exitCode: exit.exitCode }
    if (line.trim() !== '') events.push(JSON.parse(line))
  }
  return { events }
}

/** Index of the first fingerprint that differs, or -1 (what alignment would call a divergence). */
function firstDivergence(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i
  return -1
}

/** What {@link describeJournalDeterminism} needs of an adapter. */
export interface JournalDeterminismSubject {
  /** The CLI's name in the suite's title (`claude`, `codex`). */
  cli: string
  /** The recorded CLI version folders. */
  versions: readonly string[]
  /** The scenarios to check; each must be recorded in every version, and `tools` is the one the random-id check uses. */
  scenarios: readonly string[]
  /** The raw stdout of one recording. */
  recording: (version: string, scenario: string) => Buffer
  /** The adapter's translator over parsed events (see `translateWith`). */
  translate: (events: readonly unknown[], options: ReplayOptions) => StreamChunk[]
}

/**
 * Register, per recorded version, the check that the same journal translated
 * twice gives identical chunk fingerprints however the reads are cut, ids
 * included (what `createRunScopedIdGen` as `genId` guarantees, and what
 * `alignToStoredLog` needs when a host attaches), and that the check catches a random `genId`.
 */
export function describeJournalDeterminism(subject: JournalDeterminismSubject): void {
  /** Translate the journal's events with a fresh translator, as a host reading it from byte 0 does. */
  async function fingerprints(bytes: Buffer, pieceBytes: number, genId: () => string): Promise<string[]> {
    const { events, exitCode } = await journalEvents(bytes, pieceBytes)
    expect(exitCode, 'the reader stopped at the genuine sentinel').toBe(0)
    return subject.translate(events, { runId: RUN_ID, genId, exit: { exitCode: 0, stderrTail: '' } }).map((chunk: StreamChunk) => chunkFingerprint(chunk))
  }

  describe.each(subject.versions)(`${subject.cli} %s: the same journal translated twice`, (version) => {
    it.each(subject.scenarios)('%s: identical fingerprints with run-scoped ids, however the reads are cut', async (scenario) => {
      const bytes = journalBytes(subject.recording(version, scenario))
      const first = await fingerprints(bytes, 64 * 1024, createRunScopedIdGen(RUN_ID))
      const second = await fingerprints(bytes, 7, createRunScopedIdGen(RUN_ID))
      expect(first.length).toBeGreaterThan(2)
      expect(firstDivergence(first, second)).toBe(-1)
      expect(second).toEqual(first)
    })

    it('the check catches a translator whose ids are not run-scoped (random genId)', async () => {
      const bytes = journalBytes(subject.recording(version, 'tools'))
      const reference = await fingerprints(bytes, 64 * 1024, createRunScopedIdGen(RUN_ID))
      const random = await fingerprints(bytes, 64 * 1024, () => randomUUID())
      const at = firstDivergence(reference, random)
      expect(at, 'a random id makes the replay diverge from the stored log').toBeGreaterThanOrEqual(0)
      // It diverges at the first chunk carrying a generated id, not at some unrelated field.
      const chunk = JSON.parse(reference[at]!) as Record<string, unknown>
      expect(String(chunk.messageId ?? chunk.toolCallId ?? '')).toMatch(new RegExp(`^${RUN_ID}-\\d+$`))
      // And a second random translation does not even agree with the first one.
      expect(firstDivergence(random, await fingerprints(bytes, 64 * 1024, () => randomUUID()))).toBeGreaterThanOrEqual(0)
    })
  })
}
