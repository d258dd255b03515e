/**
 * Test helpers for running the real `claude` CLI offline: a fake Anthropic
 * model (aimock, in-process, on 127.0.0.1 and a free port), the path of the
 * installed CLI binary, and a private HOME/TMPDIR per CLI run with the
 * environment that points the CLI at the fake. Shared by every suite under
 * `testing/` and by the recorder. It listens on loopback unless a caller
 * names another local address (the Docker suite: the bridge's host address,
 * never all interfaces), and every helper that creates something returns the
 * way to remove it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { LLMock, type FixtureFileEntry, type JournalEntry } from '@copilotkit/aimock'

/** Fixtures: a fixture file path, a parsed `{ fixtures }` file, or the entries themselves. */
export type FixtureSource = string | { fixtures: FixtureFileEntry[] } | FixtureFileEntry[]

/** Options of {@link startFakeModel}. */
export interface FakeModelOptions {
  /** `{{name}}` placeholders replaced in every string of the fixtures (e.g. `{ workspace: '/abs/dir' }`). */
  vars?: Record<string, string>
  /** Milliseconds between streamed chunks. Default 0. */
  latency?: number
  /**
   * Address to listen on. Default `127.0.0.1`. A bridged Docker container
   * reaches the host only on the bridge's address (the Docker suite's `bridgeHostAddress`).
   */
  host?: string
}

/** A running fake model. */
export interface FakeModel {
  /** Base URL for `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:39211`. */
  readonly url: string
  /** The port it listens on (for a URL with another host name, e.g. `host.docker.internal`). */
  readonly port: number
  /** The journal: every request the fake answered, oldest first, with the fixture that matched. */
  requests: () => JournalEntry[]
  /** Forget the journal and the fixtures' match counts (for `sequenceIndex`). */
  reset: () => void
  /** Close the server. Safe to call twice. */
  stop: () => Promise<void>
}

/**
 * Start aimock on 127.0.0.1 (or `options.host`) with a free port, serving `source`.
 * @param source - See {@link FixtureSource}. The first matching fixture wins.
 * @param options - See {@link FakeModelOptions}.
 * @returns The running fake; call `stop()` when done.
 * @throws when a fixture file cannot be read or a fixture is invalid (aimock's validation message).
 * @example
 * ```ts
 * const model = await startFakeModel([{ match: { userMessage: 'hi' }, response: { content: 'Hello.' } }])
 * try { ... ANTHROPIC_BASE_URL: model.url ... } finally { await model.stop() }
 * ```
 */
export async function startFakeModel(source: FixtureSource, options: FakeModelOptions = {}): Promise<FakeModel> {
  const fixtures = substitute(readFixtures(source), options.vars ?? {})
  const mock = new LLMock({ port: 0, host: options.host ?? '127.0.0.1', logLevel: 'silent', journalMaxEntries: 0, ...(options.latency ? { latency: options.latency } : {}) })
  mock.addFixturesFromJSON(fixtures)
  const url = await mock.start()
  let stopped: Promise<void> | undefined
  return {
    url,
    port: Number(new URL(url).port),
    requests: () => mock.getRequests(),
    reset: () => {
      mock.clearRequests()
      mock.resetMatchCounts()
    },
    stop: () => (stopped ??= mock.stop()),
  }
}

function readFixtures(source: FixtureSource): FixtureFileEntry[] {
  if (Array.isArray(source)) return source
  if (typeof source !== 'string') return source.fixtures
  const parsed = JSON.parse(readFileSync(source, 'utf8')) as { fixtures?: FixtureFileEntry[] }
  if (!Array.isArray(parsed.fixtures)) throw new TypeError(`${source}: expected a JSON object with a "fixtures" array.`)
  return parsed.fixtures
}

function substitute<T>(value: T, vars: Record<string, string>): T {
  if (Object.keys(vars).length === 0) return value
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return v.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => vars[name] ?? whole)
    if (Array.isArray(v)) return v.map(walk)
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    return v
  }
  return walk(value) as T
}

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
  const packageJson = createRequire(from).resolve('@anthropic-ai/claude-code/package.json')
  return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version
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
  const dir = mkdtempSync(join(tmpdir(), `${label}-`))
  mkdirSync(join(dir, 'tmp'))
  return {
    dir,
    env: (modelUrl) => ({
      HOME: dir,
      // Its default, set so that a CLAUDE_CONFIG_DIR in the host environment cannot move sessions elsewhere.
      CLAUDE_CONFIG_DIR: join(dir, '.claude'),
      TMPDIR: join(dir, 'tmp'),
      ANTHROPIC_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: 'test-key-not-a-secret',
      // Fail at once instead of retrying with back-off when the fake answers an error.
      CLAUDE_CODE_MAX_RETRIES: '0',
      // These suites run as root; on local-process the adapter never claims isolation, so the tests opt in (TESTING.md).
      IS_SANDBOX: '1',
    }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}

const SYSTEM_REMINDERS = /^(?:<system-reminder>[\s\S]*?<\/system-reminder>\n?)+/

type ChatBody = { messages?: { role: string; content: unknown }[]; __aimock_truncated?: boolean }

/** The request body aimock journaled (Anthropic's request converted to chat-completions shape). */
function bodyOf(entry: JournalEntry): ChatBody {
  const body = (entry.body ?? {}) as ChatBody
  // aimock keeps at most 64 KB of a body in its journal; say so rather than compare against nothing.
  if (body.__aimock_truncated) throw new RangeError(`aimock truncated the journaled body of request ${entry.id} (over 64 KB), so its messages cannot be checked. Keep the conversation in this test smaller.`)
  return body
}

/**
 * The text of each user message in a journal entry, with the `<system-reminder>`
 * blocks the CLI puts in front of the first prompt removed. Tool results are
 * not user messages here (aimock lists them as `tool`).
 */
export function userTexts(entry: JournalEntry): string[] {
  const messages = bodyOf(entry).messages ?? []
  return messages.filter((m) => m.role === 'user' && typeof m.content === 'string').map((m) => (m.content as string).replace(SYSTEM_REMINDERS, ''))
}

/** The roles and texts of a journal entry's conversation (system prompt excluded), for history checks. */
export function conversationOf(entry: JournalEntry): { role: string; text: string }[] {
  const messages = bodyOf(entry).messages ?? []
  return messages
    .filter((m) => m.role !== 'system')
    .map((m) => ({ role: m.role, text: typeof m.content === 'string' ? (m.role === 'user' ? m.content.replace(SYSTEM_REMINDERS, '') : m.content) : '' }))
}
