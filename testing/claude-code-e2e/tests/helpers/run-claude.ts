/**
 * Helpers of the Claude Code end-to-end suites: the shared harness-run helpers of
 * `@testing/support`, with `runClaude` bound to the adapter's session-id event.
 */
import { CLAUDE_CODE_SESSION_EVENT, type claudeCodeText } from '@tanstack/ai-claude-code'
import { runHarness, type HarnessRunInput, type Outcome } from '@testing/support/harness-run'

export { custom, ofType, processesMatching, processesWithHome, recording, waitFor, type AnyChunk, type Outcome } from '@testing/support/harness-run'

/** One chat() run with the Claude Code adapter; collects what a user would see. */
export const runClaude = (input: HarnessRunInput<ReturnType<typeof claudeCodeText>>): Promise<Outcome> => runHarness({ ...input, sessionEvent: CLAUDE_CODE_SESSION_EVENT })
