/**
 * Recorded `codex exec --json` stdout (tests/fixtures/codex/<cli-version>/<scenario>.ndjson,
 * with `<scenario>.stderr` beside it for a run that failed before its turn,
 * written by testing/codex-e2e/src/record.ts) and the small pipeline
 * that replays it the way the adapter reads a live CLI: bytes → `toLines` →
 * JSON (non-JSON lines set aside) → translator.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { StreamChunk } from '@tanstack/ai'
import { createRunScopedIdGen, toLines } from '@tanstack/ai-sandbox'
import { createCodexTranslator, type CodexExit } from '../../src/index.js'

const root = fileURLToPath(new URL('../fixtures/codex/', import.meta.url))

/** Every recorded CLI version folder, oldest name first. */
export function cliVersions(): string[] {
  return readdirSync(root).sort()
}

/** The raw bytes of one recording. */
export function recording(version: string, scenario: string): Buffer {
  return readFileSync(`${root}${version}/${scenario}.ndjson`)
}

/** The recorded stderr of a run that failed before its turn (`<scenario>.stderr`). */
export function recordedStderr(version: string, scenario: string): string {
  return readFileSync(`${root}${version}/${scenario}.stderr`, 'utf8')
}

/** Parse complete NDJSON bytes into values (empty lines skipped). */
export function linesOf(bytes: Buffer | string): unknown[] {
  return bytes
    .toString()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as unknown)
}

/** The `thread_id` of a recording's `thread.started` line. */
export function sessionOf(bytes: Buffer): string {
  return (linesOf(bytes).find((line) => (line as { type?: string }).type === 'thread.started') as { thread_id: string }).thread_id
}

/** The recording's `turn.completed` usage. */
export function usageOf(bytes: Buffer): Record<string, number> {
  return (linesOf(bytes).find((line) => (line as { type?: string }).type === 'turn.completed') as { usage: Record<string, number> }).usage
}

export interface ReplayOptions {
  runId?: string
  genId?: () => string
  exit?: CodexExit
}

/** Translate parsed lines with a run-scoped id generator; `finish` runs with a clean exit unless given. */
export function translate(lines: readonly unknown[], options: ReplayOptions = {}): StreamChunk[] {
  const runId = options.runId ?? 'run-1'
  const translator = createCodexTranslator({ runId, threadId: 'thread-1', model: 'gpt-5.5', genId: options.genId ?? createRunScopedIdGen(runId) })
  return [...translator.start(), ...lines.flatMap((line) => translator.push(line)), ...translator.finish(options.exit ?? { exitCode: 0, stderrTail: '' })]
}

/** Replay byte chunks as the adapter reads stdout: `toLines`, skip blank lines, set non-JSON lines aside, translate. */
export async function replay(chunks: Iterable<Uint8Array | string>, options: ReplayOptions = {}): Promise<{ chunks: StreamChunk[]; nonJson: string[] }> {
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
  return { chunks: translate(values, options), nonJson }
}

