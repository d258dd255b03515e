/**
 * Recorded `claude` stdout (tests/fixtures/claude-code/<cli-version>/<scenario>.ndjson,
 * written by testing/claude-code-e2e/src/record.ts) and the small pipeline
 * that replays it the way the adapter reads a live CLI: bytes → `toLines` →
 * JSON (non-JSON lines set aside) → translator.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { StreamChunk } from '@tanstack/ai'
import { createRunScopedIdGen, toLines } from '@tanstack/ai-sandbox'
import { createClaudeCodeTranslator, type ClaudeCodeExit } from '../../src/index.js'

const root = fileURLToPath(new URL('../fixtures/claude-code/', import.meta.url))

/** Every recorded CLI version folder, oldest name first. */
export function cliVersions(): string[] {
  return readdirSync(root).sort()
}

/** The raw bytes of one recording. */
export function recording(version: string, scenario: string): Buffer {
  return readFileSync(`${root}${version}/${scenario}.ndjson`)
}

/** Parse complete NDJSON bytes into values (empty lines skipped). */
export function linesOf(bytes: Buffer | string): unknown[] {
  return bytes
    .toString()
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as unknown)
}

/** The `session_id` of a recording's first line. */
export function sessionOf(bytes: Buffer): string {
  return (linesOf(bytes)[0] as { session_id: string }).session_id
}

/** The recording's `result` line. */
export function resultOf(bytes: Buffer): { total_cost_usd?: number; usage?: Record<string, number>; result?: string } {
  return linesOf(bytes).find((line) => (line as { type?: string }).type === 'result') as never
}

export interface ReplayOptions {
  runId?: string
  genId?: () => string
  exit?: ClaudeCodeExit
}

/** Translate parsed lines with a run-scoped id generator; `finish` runs with a clean exit unless given. */
export function translate(lines: readonly unknown[], options: ReplayOptions = {}): StreamChunk[] {
  const runId = options.runId ?? 'run-1'
  const translator = createClaudeCodeTranslator({ runId, threadId: 'thread-1', model: 'sonnet', genId: options.genId ?? createRunScopedIdGen(runId) })
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

/** Merge consecutive content/args deltas of one message or tool call, so shapes do not depend on how the fake model chunked its stream. */
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
