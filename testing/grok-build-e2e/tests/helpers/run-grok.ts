/**
 * Helpers of the Grok Build end-to-end suites: the shared harness-run helpers of
 * `@testing/support`, with `runGrok` bound to the adapter's session-id event.
 */
import { GROK_BUILD_SESSION_EVENT, type grokBuildText } from '@tanstack/ai-grok-build'
import type { SandboxProvider } from '@tanstack/ai-sandbox'
import { recording, runHarness, type HarnessRunInput, type Outcome } from '@testing/support/harness-run'

export { custom, ofType, processesMatching, processesWithEnv, recording, waitFor, type Outcome } from '@testing/support/harness-run'

/** One chat() run with the Grok Build adapter; collects what a user would see. */
export const runGrok = (input: HarnessRunInput<ReturnType<typeof grokBuildText>>): Promise<Outcome> => runHarness({ ...input, sessionEvent: GROK_BUILD_SESSION_EVENT })

/** A provider whose handles claim they cannot write stdin (capability `writableStdin: false`). */
export const withoutStdin = (inner: SandboxProvider): SandboxProvider => recording(inner, false).provider
