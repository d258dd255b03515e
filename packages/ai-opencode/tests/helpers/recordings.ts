/**
 * Recorded `opencode` stdout (tests/fixtures/opencode/<cli-version>/<scenario>.ndjson,
 * written by testing/opencode-e2e/src/record.ts), replayed through the
 * OpenCode translator the way the adapter reads a live CLI (the pipeline is
 * @testing/support/harness-recordings), and what the CLI's lines say.
 */
import { linesOf, ndjsonRecordings } from '@testing/support/harness-recordings'
import { createOpencodeTranslator, type OpencodeExit } from '../../src/index.js'

/** The recordings, and the translator over them with model `aimock/fake-model`. */
export const { cliVersions, recording, translate, replay } = ndjsonRecordings(new URL('../fixtures/opencode/', import.meta.url), (run) => createOpencodeTranslator({ ...run, model: 'aimock/fake-model' }))

/** The `sessionID` of a recording's first line. */
export function sessionOf(bytes: Buffer): string {
  return (linesOf(bytes)[0] as { sessionID: string }).sessionID
}

/** The exit code each recorded scenario ended with (the api-error run exits 1). */
export function exitOf(scenario: string): OpencodeExit {
  return scenario === 'api-error' ? { exitCode: 1, stderrTail: '' } : { exitCode: 0, stderrTail: '' }
}
