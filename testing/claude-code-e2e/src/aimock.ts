/**
 * Test helpers for running the real `claude` CLI offline against the fake
 * model (aimock, from @testing/support/fake-model and re-exported here; the
 * Docker suite makes it listen on the bridge's host address, never on all
 * interfaces): the path of the installed CLI binary, a private HOME/TMPDIR
 * per CLI run with the environment that points the CLI at the fake, and what
 * the fake's journal says the CLI sent. Shared by every suite under
 * `testing/` and by the recorder.
 */
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { JournalEntry } from '@copilotkit/aimock'
import { installedVersion, journaledConversation, journaledMessages, makeCliHome } from '@testing/support/fake-model'

export { startFakeModel, type FakeModel, type FakeModelOptions, type FixtureSource } from '@testing/support/fake-model'

/**
 * The native `claude` binary installed with `@anthropic-ai/claude-code` (its npm `bin`).
 * @param from - Resolve from this file's package (default) or another URL/path.
 */
export function claudeBinary(from: string = import.meta.url): string {
  const packageJson = createRequire(from).resolve('@anthropic-ai/claude-code/package.json')
  return join(dirname(packageJson), 'bin', 'claude.exe')
}

/** The installed CLI version, e.g. `2.1.332` (from its package.json). */
export function claudeVersion(from: string = import.meta.url): string {
  return installedVersion('@anthropic-ai/claude-code', from)
}

/** A private HOME (with its own TMPDIR) for CLI runs; sessions live here, so resume needs the same one. */
export interface ClaudeHome {
  readonly dir: string
  /** The environment for a CLI run against `modelUrl`: HOME, config dir, TMPDIR, base URL, a dummy key, no retries. */
  env: (modelUrl: string) => Record<string, string>
  /** Remove the directory and everything the CLI left in it. */
  cleanup: () => void
}

/**
 * Make a HOME for the CLI under the OS temp dir. TMPDIR points inside it too,
 * because the CLI keeps task state and shell snapshots under `$TMPDIR/claude-<uid>`.
 */
export function makeClaudeHome(label = 'claude-home'): ClaudeHome {
  const { dir, tmp, cleanup } = makeCliHome(label)
  return {
    dir,
    env: (modelUrl) => ({
      HOME: dir,
      // Its default, set so that a CLAUDE_CONFIG_DIR in the host environment cannot move sessions elsewhere.
      CLAUDE_CONFIG_DIR: join(dir, '.claude'),
      TMPDIR: tmp,
      ANTHROPIC_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: 'test-key-not-a-secret',
      // Fail at once instead of retrying with back-off when the fake answers an error.
      CLAUDE_CODE_MAX_RETRIES: '0',
      // These suites run as root; on local-process the adapter never claims isolation, so the tests opt in (TESTING.md).
      IS_SANDBOX: '1',
    }),
    cleanup,
  }
}

const SYSTEM_REMINDERS = /^(?:<system-reminder>[\s\S]*?<\/system-reminder>\n?)+/
const withoutReminders = (text: string) => text.replace(SYSTEM_REMINDERS, '')

/**
 * The text of each user message in a journal entry, with the `<system-reminder>`
 * blocks the CLI puts in front of the first prompt removed. Tool results are
 * not user messages here (aimock lists them as `tool`).
 */
export function userTexts(entry: JournalEntry): string[] {
  return journaledMessages(entry)
    .filter((m) => m.role === 'user' && typeof m.content === 'string')
    .map((m) => withoutReminders(m.content as string))
}

/** The roles and texts of a journal entry's conversation (system prompt excluded, reminders removed), for history checks. */
export function conversationOf(entry: JournalEntry): { role: string; text: string }[] {
  return journaledConversation(entry, withoutReminders)
}
