/**
 * The fake model the harness suites run a real CLI against: aimock, in-process
 * on a free port (127.0.0.1 unless a suite names another local address), with
 * fixtures from a file or objects and `{{name}}` placeholders; what its journal
 * recorded of each chat; the installed version of a CLI's npm package; and a
 * private HOME with its own TMPDIR for CLI runs. Each suite's `src/aimock.ts`
 * adds what its CLI needs (binary path, provider settings, environment).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
   * reaches the host only on the bridge's address (`bridgeHostAddress` of the Docker engine helpers).
   */
  host?: string
}

/** A running fake model. */
export interface FakeModel {
  /** Base URL, e.g. `http://127.0.0.1:39211`. */
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

/** One message of a journaled request, as aimock shows every API's request (chat-completions shape). */
export interface JournaledMessage {
  role: string
  content: unknown
}

/**
 * The messages of a journaled request.
 * @throws RangeError when aimock truncated the body (it keeps at most 64 KB), rather than compare against nothing.
 */
export function journaledMessages(entry: JournalEntry): JournaledMessage[] {
  const body = (entry.body ?? {}) as { messages?: JournaledMessage[]; __aimock_truncated?: boolean }
  if (body.__aimock_truncated) throw new RangeError(`aimock truncated the journaled body of request ${entry.id} (over 64 KB), so its messages cannot be checked. Keep the conversation in this test smaller.`)
  return body.messages ?? []
}

/**
 * The roles and texts of a journaled request's conversation (system prompt excluded), for history checks.
 * @param userText - Cleans a user message's text (a CLI's own preamble removed); as it is by default.
 */
export function journaledConversation(entry: JournalEntry, userText: (text: string) => string = (text) => text): { role: string; text: string }[] {
  return journaledMessages(entry)
    .filter((m) => m.role !== 'system')
    .map((m) => ({ role: m.role, text: typeof m.content === 'string' ? (m.role === 'user' ? userText(m.content) : m.content) : '' }))
}

/**
 * The version of an installed npm package, e.g. a CLI's `2.1.332` (from its package.json).
 * @param from - Resolve from this file or URL (the suite's own module, whose package depends on it).
 */
export function installedVersion(packageName: string, from: string): string {
  const packageJson = createRequire(from).resolve(`${packageName}/package.json`)
  return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version
}

/** A private HOME for CLI runs (sessions live there, so resume needs the same one), with a TMPDIR inside it. */
export interface CliHome {
  readonly dir: string
  /** `<dir>/tmp`, for the run's TMPDIR, so nothing of a run lands in the host's /tmp. */
  readonly tmp: string
  /** Remove the directory and everything the CLI left in it. */
  cleanup: () => void
}

/** Make a HOME named `<label>-XXXXXX` under the OS temp dir, with its `tmp` folder. */
export function makeCliHome(label: string): CliHome {
  const dir = mkdtempSync(join(tmpdir(), `${label}-`))
  const tmp = join(dir, 'tmp')
  mkdirSync(tmp)
  return { dir, tmp, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}
