/**
 * Recorded `claude` stdout (tests/fixtures/claude-code/<cli-version>/<scenario>.ndjson,
 * written by testing/claude-code-e2e/src/record.ts), replayed through the
 * Claude Code translator the way the adapter reads a live CLI (the pipeline
 * is @testing/support/harness-recordings), and what the CLI's lines say.
 */
import { linesOf, ndjsonRecordings } from '@testing/support/harness-recordings'
import { createClaudeCodeTranslator } from '../../src/index.js'

/** The recordings, and the translator over them with model `sonnet`. */
export const { cliVersions, versionsWith, recording, translate, replay } = ndjsonRecordings(new URL('../fixtures/claude-code/', import.meta.url), (run) => createClaudeCodeTranslator({ ...run, model: 'sonnet' }))

/** The `session_id` of a recording's first line. */
export function sessionOf(bytes: Buffer): string {
  return (linesOf(bytes)[0] as { session_id: string }).session_id
}

/** The recording's `result` line. */
export function resultOf(bytes: Buffer): { total_cost_usd?: number; usage?: Record<string, number>; result?: string } {
  return linesOf(bytes).find((line) => (line as { type?: string }).type === 'result') as never
}
