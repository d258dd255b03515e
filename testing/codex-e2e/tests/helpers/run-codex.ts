/**
 * Helpers of the Codex end-to-end suites: the shared harness-run helpers of
 * `@testing/support`, with `runCodex` bound to the adapter's session-id event.
 */
import { CODEX_SESSION_EVENT, type codexText } from '@tanstack/ai-codex'
import { runHarness, type HarnessRunInput, type Outcome } from '@testing/support/harness-run'

export { custom, ofType, processesMatching, processesWithHome, recording, waitFor, type Outcome } from '@testing/support/harness-run'

/** One chat() run with the Codex adapter; collects what a user would see. */
export const runCodex = (input: HarnessRunInput<ReturnType<typeof codexText>>): Promise<Outcome> => runHarness({ ...input, sessionEvent: CODEX_SESSION_EVENT })
