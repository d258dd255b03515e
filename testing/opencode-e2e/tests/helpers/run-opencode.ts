/**
 * Helpers of the OpenCode end-to-end suites: the shared harness-run helpers of
 * `@testing/support`, with `runOpencode` bound to the adapter's session-id event.
 */
import { OPENCODE_SESSION_EVENT, type opencodeText } from '@tanstack/ai-opencode'
import { runHarness, type HarnessRunInput, type Outcome } from '@testing/support/harness-run'

export { ofType, processesMatching, processesWithHome, recording, waitFor, type Outcome } from '@testing/support/harness-run'

/** One chat() run with the OpenCode adapter; collects what a user would see. */
export const runOpencode = (input: HarnessRunInput<ReturnType<typeof opencodeText>>): Promise<Outcome> => runHarness({ ...input, sessionEvent: OPENCODE_SESSION_EVENT })
