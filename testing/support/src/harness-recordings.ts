/**
 * Replaying recorded CLI output through a harness adapter's translator, for
 * the adapters' unit suites: the folder of recordings (`<cli-version>/<scenario>.ndjson`),
 * NDJSON parsing, one translator run over parsed events, the `toLines` replay
 * the adapters use on a live CLI's stdout, delta collapsing, the ways the
 * replay suites cut a recording's bytes, and the chunk shapes every adapter's
 * translator emits alike. What a CLI's lines mean stays in each adapter's helper.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { createRunScopedIdGen, toLines, type HarnessExit } from '@tanstack/ai-sandbox'

/** A folder of recordings: one folder per CLI version, one `<scenario>.ndjson` (and maybe `<scenario>.stderr`) per recorded run. */
export interface RecordingFolder {
  /** Every recorded CLI version folder, oldest name first. */
  versions: () => string[]
  /** The versions that hold `<scenario>.ndjson` (a scenario recorded before a CLI feature existed is missing in older ones). */
  versionsWith: (scenario: string) => string[]
  /** The raw bytes of `<version>/<scenario>.<extension>` (`ndjson` unless given). */
  read: (version: string, scenario: string, extension?: string) => Buffer
}

/**
 * The recordings under `folder`.
 * @param folder - The folder's URL, e.g. `new URL('../fixtures/codex/', import.meta.url)` (with the trailing slash).
 */
export function recordingFolder(folder: URL): RecordingFolder {
  const root = fileURLToPath(folder)
  const read = (version: string, scenario: string, extension = 'ndjson') => readFileSync(`${root}${version}/${scenario}.${extension}`)
  const versions = () => readdirSync(root).sort()
  const versionsWith = (scenario: string) =>
    versions().filter((version) => {
      try {
        read(version, scenario)
        return true
      } catch {
        return false // recorded before the scenario existed
      }
    })
  return { versions, versionsWith, read }
}

/** Parse complete NDJSON bytes into values (empty lines skipped). */
export function linesOf(bytes: Buffer | string): unknown[] {
  return bytes
    .toString()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as unknown)
}

/** How a replay names its run and how the CLI ended. */
export interface ReplayOptions {
  /** Default `run-1`. */
  runId?: string
  /** Default: run-scoped ids (`createRunScopedIdGen(runId)`). */
  genId?: () => string
  /** Handed to `finish`; default a clean exit (code 0, empty stderr). */
  exit?: HarnessExit
}

/** The run a translator is made for: `threadId` is always `thread-1`. */
export interface ReplayRun {
  runId: string
  threadId: string
  genId: () => string
}

/** An adapter's translator as a replay drives it (core's `HarnessTranslator`, with the adapter's own event type). */
export interface ReplayTranslator<TEvent = unknown> {
  start: () => readonly StreamChunk[]
  push: (event: TEvent) => readonly StreamChunk[]
  finish: (exit: HarnessExit) => readonly StreamChunk[]
}

/**
 * Drive a fresh translator over `events` as the adapter does: `start`, one
 * `push` per event, `finish` with the exit.
 * @param create - Makes the adapter's translator for the run (its own options, such as the model name, added).
 */
export function translateWith<TEvent>(create: (run: ReplayRun) => ReplayTranslator<TEvent>, events: readonly TEvent[], options: ReplayOptions = {}): StreamChunk[] {
  const runId = options.runId ?? 'run-1'
  const translator = create({ runId, threadId: 'thread-1', genId: options.genId ?? createRunScopedIdGen(runId) })
  return [...translator.start(), ...events.flatMap((event) => translator.push(event)), ...translator.finish(options.exit ?? { exitCode: 0, stderrTail: '' })]
}

/**
 * Replay byte chunks as an adapter reads an NDJSON CLI's stdout: `toLines`,
 * skip blank lines, set non-JSON lines aside, and hand the values to `translate`.
 */
export async function replayNdjson(chunks: Iterable<Uint8Array | string>, translate: (values: unknown[]) => StreamChunk[]): Promise<{ chunks: StreamChunk[]; nonJson: string[] }> {
  async function* source() {
    yield* chunks
  }
  const values: unknown[] = []
  const nonJson: string[] = []
  for await (const line of toLines(source())) {
    if (line.trim() === '') continue
    try {
      values.push(JSON.parse(line))
    } catch {
      nonJson.push(line)
    }
  }
  return { chunks: translate(values), nonJson }
}

/** One NDJSON CLI's recordings and its translator, replayed the way the adapter reads the live CLI. */
export interface NdjsonRecordings {
  /** Every recorded CLI version folder, oldest name first. */
  cliVersions: () => string[]
  /** The versions that recorded `scenario`. */
  versionsWith: (scenario: string) => string[]
  /** The raw stdout of one recording. */
  recording: (version: string, scenario: string) => Buffer
  /** The recorded stderr of a run (`<scenario>.stderr`), for one that failed before it wrote anything. */
  recordedStderr: (version: string, scenario: string) => string
  /** Translate parsed lines (see {@link translateWith}). */
  translate: (lines: readonly unknown[], options?: ReplayOptions) => StreamChunk[]
  /** Replay stdout byte chunks (see {@link replayNdjson}), then translate. */
  replay: (chunks: Iterable<Uint8Array | string>, options?: ReplayOptions) => Promise<{ chunks: StreamChunk[]; nonJson: string[] }>
}

/**
 * The recordings under `folder` of a CLI that writes one JSON event per line, with its translator.
 * @param folder - See {@link recordingFolder}.
 * @param create - Makes the adapter's translator for a run (see {@link translateWith}).
 */
export function ndjsonRecordings(folder: URL, create: (run: ReplayRun) => ReplayTranslator): NdjsonRecordings {
  const recordings = recordingFolder(folder)
  const translate = (lines: readonly unknown[], options: ReplayOptions = {}) => translateWith(create, lines, options)
  return {
    cliVersions: recordings.versions,
    versionsWith: recordings.versionsWith,
    recording: (version, scenario) => recordings.read(version, scenario),
    recordedStderr: (version, scenario) => recordings.read(version, scenario, 'stderr').toString('utf8'),
    translate,
    replay: (chunks, options = {}) => replayNdjson(chunks, (values) => translate(values, options)),
  }
}

/** Merge consecutive content/args deltas of one message or tool call, so shapes do not depend on how the CLI or the fake model chunked its stream. */
export function collapse(chunks: readonly StreamChunk[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = []
  for (const chunk of chunks as unknown as Record<string, unknown>[]) {
    const last = out.at(-1)
    const key = chunk.type === 'TOOL_CALL_ARGS' ? 'toolCallId' : 'messageId'
    const mergeable = chunk.type === 'TEXT_MESSAGE_CONTENT' || chunk.type === 'REASONING_MESSAGE_CONTENT' || chunk.type === 'TOOL_CALL_ARGS'
    if (mergeable && last && last.type === chunk.type && last[key] === chunk[key]) last.delta = `${last.delta as string}${chunk.delta as string}`
    else out.push({ ...chunk })
  }
  return out
}

/** The chunks' types, a `CUSTOM` chunk as `CUSTOM:<name>`. */
export function chunkTypes(chunks: readonly StreamChunk[]): string[] {
  return chunks.map((c) => (c.type === 'CUSTOM' ? `CUSTOM:${c.name}` : c.type))
}

/** An assistant text message with one (collapsed) delta. */
export function textMessage(messageId: string, delta: string): Record<string, unknown>[] {
  return [
    { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant' },
    { type: 'TEXT_MESSAGE_CONTENT', messageId, delta },
    { type: 'TEXT_MESSAGE_END', messageId },
  ]
}

/** A reasoning message with one (collapsed) delta, inside its REASONING_START/END. */
export function reasoningMessage(messageId: string, delta: string): Record<string, unknown>[] {
  return [
    { type: 'REASONING_START', messageId },
    { type: 'REASONING_MESSAGE_START', messageId, role: 'reasoning' },
    { type: 'REASONING_MESSAGE_CONTENT', messageId, delta },
    { type: 'REASONING_MESSAGE_END', messageId },
    { type: 'REASONING_END', messageId },
  ]
}

/** The result of a tool call the CLI ran. */
export function toolResult(messageId: string, toolCallId: string, content: unknown): Record<string, unknown> {
  return { type: 'TOOL_CALL_RESULT', messageId, toolCallId, content, role: 'tool' }
}

/** `bytes` cut in two at byte `at`. */
export function splitAt(bytes: Buffer, at: number): Buffer[] {
  return [bytes.subarray(0, at), bytes.subarray(at)]
}

/** The offsets of the bytes that start a multi-byte UTF-8 character. */
export function multiByteStarts(bytes: Buffer): number[] {
  return [...bytes.entries()].filter(([, b]) => b >= 0xc0).map(([i]) => i)
}

/** A pseudo-random source in [0, 1) that gives the same sequence for the same `seed` (a linear congruential generator). */
export function seededRandom(seed: number): () => number {
  let state = seed
  return () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
}

/** `bytes` cut at 1 to 12 offsets drawn from `random`: the sorted cuts (to name a failure) and the pieces. */
export function randomCuts(bytes: Buffer, random: () => number): { cuts: number[]; pieces: Buffer[] } {
  const cuts = [...new Set(Array.from({ length: 1 + Math.floor(random() * 12) }, () => Math.floor(random() * bytes.length)))].sort((a, b) => a - b)
  const pieces = [0, ...cuts].map((from, i) => bytes.subarray(from, [...cuts, bytes.length][i]))
  return { cuts, pieces }
}

/** `bytes` one byte per piece. */
export function byteByByte(bytes: Buffer): Uint8Array[] {
  return [...bytes].map((b) => Uint8Array.of(b))
}

/** A replay of a recording's bytes delivered as `pieces` (the adapter's own reading pipeline). */
export type PiecesReplay = (pieces: Uint8Array[]) => Promise<{ chunks: StreamChunk[] }>

/**
 * Expect `replay` to give `expected` for `bytes` cut in two at every offset
 * from 0 to its length. Each result is compared as JSON first, and only a
 * mismatch goes through `toEqual` (a deep compare per offset is slow for a long recording).
 */
export async function expectReplayAtEverySplit(bytes: Buffer, expected: readonly StreamChunk[], replay: PiecesReplay): Promise<void> {
  for (let at = 0; at <= bytes.length; at++) {
    const { chunks } = await replay(splitAt(bytes, at))
    if (JSON.stringify(chunks) !== JSON.stringify(expected)) expect(chunks, `split at byte ${at}`).toEqual(expected)
  }
}

/** Expect `replay` to give `expected` for `bytes` cut in two at each of `offsets`, in order. */
export async function expectReplayAtSplits(bytes: Buffer, offsets: readonly number[], expected: readonly StreamChunk[], replay: PiecesReplay): Promise<void> {
  for (const at of offsets) expect((await replay(splitAt(bytes, at))).chunks, `split at byte ${at}`).toEqual(expected)
}

/** Expect `replay` to give `expected` for `trials` random cuts of `bytes` (see {@link randomCuts}); a failure names `label` and the cuts. */
export async function expectReplayAtRandomCuts(bytes: Buffer, expected: readonly StreamChunk[], replay: PiecesReplay, options: { random: () => number; trials: number; label: string }): Promise<void> {
  for (let trial = 0; trial < options.trials; trial++) {
    const { cuts, pieces } = randomCuts(bytes, options.random)
    expect((await replay(pieces)).chunks, `${options.label}: cuts ${cuts.join(',')}`).toEqual(expected)
  }
}

/** `bytes` in pieces of 65,521 bytes (a prime, so no piece boundary lines up with a power-of-two buffer), the last one shorter. */
export function piecesOf(bytes: Buffer): Buffer[] {
  return Array.from({ length: Math.ceil(bytes.length / 65_521) }, (_, i) => bytes.subarray(i * 65_521, (i + 1) * 65_521))
}

/** Over 2 MB of text with a two-byte and many four-byte characters: one line no reader may cut, truncate or re-encode. */
export const BIG_TEXT = `${'x'.repeat(1024 * 1024)}é${'🚀'.repeat(256 * 1024)}`

/** `lines` with a noise line before each one (taking `noise` in turn), joined with CRLF. */
export function withNoise(lines: readonly string[], noise: readonly string[]): string {
  return lines.flatMap((line, i) => [noise[i % noise.length]!, line]).join('\r\n')
}
