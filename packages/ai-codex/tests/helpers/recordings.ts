/**
 * Recorded `codex exec --json` stdout (tests/fixtures/codex/<cli-version>/<scenario>.ndjson,
 * with `<scenario>.stderr` beside it for a run that failed before its turn,
 * written by testing/codex-e2e/src/record.ts), replayed through the Codex
 * translator the way the adapter reads a live CLI (the pipeline is
 * @testing/support/harness-recordings), and what the CLI's lines say.
 */
import { linesOf, ndjsonRecordings } from '@testing/support/harness-recordings'
import { createCodexTranslator } from '../../src/index.js'

/** The recordings, and the translator over them with model `gpt-5.5`. */
export const { cliVersions, versionsWith, recording, recordedStderr, translate, replay } = ndjsonRecordings(new URL('../fixtures/codex/', import.meta.url), (run) => createCodexTranslator({ ...run, model: 'gpt-5.5' }))

/** The `thread_id` of a recording's `thread.started` line. */
export function sessionOf(bytes: Buffer): string {
  return (linesOf(bytes).find((line) => (line as { type?: string }).type === 'thread.started') as { thread_id: string }).thread_id
}

/** The recording's `turn.completed` usage. */
export function usageOf(bytes: Buffer): Record<string, number> {
  return (linesOf(bytes).find((line) => (line as { type?: string }).type === 'turn.completed') as { usage: Record<string, number> }).usage
}
