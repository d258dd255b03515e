/**
 * Test helpers for running the real `opencode` CLI offline: a fake
 * OpenAI-compatible model (aimock, in-process, on 127.0.0.1 and a free port),
 * the OpenCode config that points a provider at it, the path of the native
 * CLI binary shipped in the npm package, and a private HOME (with its XDG
 * folders) per CLI run. Shared by the suites, the recorder and the
 * benchmark. Every helper that creates something returns the way to remove it.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'
import { LLMock, type FixtureFileEntry, type JournalEntry } from '@copilotkit/aimock'
import { shellQuote } from '@tanstack/ai-sandbox'

/** Fixtures: a fixture file path, a parsed `{ fixtures }` file, or the entries themselves. */
export type FixtureSource = string | { fixtures: FixtureFileEntry[] } | FixtureFileEntry[]

/** The model the suites ask for: provider `aimock` (see {@link providerConfig}), model `fake-model`. */
export const FAKE_MODEL = 'aimock/fake-model'

/** Options of {@link startFakeModel}. */
export interface FakeModelOptions {
  /** `{{name}}` placeholders replaced in every string of the fixtures. */
  vars?: Record<string, string>
  /** Address to listen on. Default `127.0.0.1`; the Docker suite passes the bridge's host address. */
  host?: string
}

/** A running fake model. */
export interface FakeModel {
  /** Base URL, e.g. `http://127.0.0.1:39211` (the provider wants `<url>/v1`). */
  readonly url: string
  /** The port it listens on (for a URL with another host name, e.g. `host.docker.internal`). */
  readonly port: number
  /** The journal: every request the fake answered, oldest first, with the fixture that matched. */
  requests: () => JournalEntry[]
  /** Close the server. Safe to call twice. */
  stop: () => Promise<void>
}

/**
 * Start aimock with a free port, serving `source`.
 * @param source - See {@link FixtureSource}. The first matching fixture wins.
 * @param options - See {@link FakeModelOptions}.
 * @returns The running fake; call `stop()` when done.
 * @throws when a fixture file cannot be read or a fixture is invalid (aimock's validation message).
 * @example
 * ```ts
 * const model = await startFakeModel([{ match: { userMessage: 'hi' }, response: { content: 'Hello.' } }])
 * try { opencodeText(FAKE_MODEL, { config: providerConfig(model.url) }) } finally { await model.stop() }
 * ```
 */
export async function startFakeModel(source: FixtureSource, options: FakeModelOptions = {}): Promise<FakeModel> {
  const fixtures = substitute(readFixtures(source), options.vars ?? {})
  const mock = new LLMock({ port: 0, host: options.host ?? '127.0.0.1', logLevel: 'silent', journalMaxEntries: 0 })
  mock.addFixturesFromJSON(fixtures)
  const url = await mock.start()
  let stopped: Promise<void> | undefined
  return {
    url,
    port: Number(new URL(url).port),
    requests: () => mock.getRequests(),
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
 * The OpenCode config (for `opencodeText(model, { config })`) with a provider
 * `aimock` that speaks chat completions to the fake at `baseUrl`. The
 * `@ai-sdk/openai-compatible` provider is bundled in the CLI, so nothing is installed.
 * @param baseUrl - The fake's URL as the CLI reaches it (`http://host.docker.internal:<port>` in a container).
 */
export function providerConfig(baseUrl: string): Record<string, unknown> {
  return {
    provider: {
      aimock: {
        npm: '@ai-sdk/openai-compatible',
        name: 'aimock',
        options: { baseURL: `${baseUrl}/v1`, apiKey: 'test-key-not-a-secret' },
        models: { 'fake-model': { name: 'Fake model' } },
      },
    },
  }
}

/**
 * The native `opencode` binary from the `opencode-ai` npm package's platform
 * dependency (`opencode-linux-x64`, …), the file its postinstall would copy.
 * It needs no install script, so pnpm's refusal to run one does not matter.
 * @param from - Resolve from this file's package (default) or another URL/path.
 * @throws when no platform package of this machine is installed.
 */
export function opencodeBinary(from: string = import.meta.url): string {
  const requireFromCli = createRequire(createRequire(from).resolve('opencode-ai/package.json'))
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64'
  const candidates = [`opencode-linux-${arch}`, `opencode-linux-${arch}-baseline`, `opencode-linux-${arch}-musl`, `opencode-linux-${arch}-baseline-musl`]
  for (const name of candidates) {
    try {
      const binary = join(dirname(requireFromCli.resolve(`${name}/package.json`)), 'bin', 'opencode')
      if (existsSync(binary)) return binary
    } catch {
      continue // not installed for this machine; try the next variant
    }
  }
  throw new Error(`No opencode binary for linux-${arch}: none of ${candidates.join(', ')} is installed next to opencode-ai. Run pnpm install.`)
}

/** The installed CLI version, e.g. `1.18.33` (from its package.json). */
export function opencodeVersion(from: string = import.meta.url): string {
  return (JSON.parse(readFileSync(createRequire(from).resolve('opencode-ai/package.json'), 'utf8')) as { version: string }).version
}

/**
 * The environment of a CLI run with its HOME at `home`: the XDG folders under
 * it, so config, sessions (data), cache and state all stay in that HOME.
 */
export function homeEnv(home: string): Record<string, string> {
  return {
    HOME: home,
    XDG_CONFIG_HOME: posix.join(home, '.config'),
    XDG_DATA_HOME: posix.join(home, '.local', 'share'),
    XDG_CACHE_HOME: posix.join(home, '.cache'),
    XDG_STATE_HOME: posix.join(home, '.local', 'state'),
  }
}

/**
 * Files that make OpenCode's config folder look as if its `@opencode-ai/plugin`
 * dependency were installed. On start OpenCode installs that package into
 * `$XDG_CONFIG_HOME/opencode` from the npm registry unless a `node_modules`
 * folder and a lock file listing it are there; with them it stays offline.
 * @returns Relative path → content, under `<home>/.config/opencode/`.
 */
export function offlineConfigFiles(version: string): Record<string, string> {
  return {
    'package.json': `${JSON.stringify({ dependencies: { '@opencode-ai/plugin': version } })}\n`,
    'package-lock.json': `${JSON.stringify({ packages: { '': { dependencies: { '@opencode-ai/plugin': version } } } })}\n`,
  }
}

/** Shell commands that prepare an offline config folder under `home` (for sandboxes the test cannot write into directly). */
export function offlineHomeSetup(home: string, version: string): string[] {
  const dir = posix.join(home, '.config', 'opencode')
  const files = Object.entries(offlineConfigFiles(version)).map(([name, content]) => `printf '%s' ${shellQuote(content)} > ${shellQuote(posix.join(dir, name))}`)
  return [`mkdir -p ${shellQuote(posix.join(dir, 'node_modules'))}`, ...files]
}

/** A private HOME for CLI runs; sessions live here, so resume needs the same one. */
export interface OpencodeHome {
  readonly dir: string
  /** HOME, XDG folders and TMPDIR (OpenCode makes `$TMPDIR/opencode`) for a CLI run. */
  env: () => Record<string, string>
  /** Remove the directory and everything the CLI left in it. */
  cleanup: () => void
}

/** Make a HOME under the OS temp dir, with its config folder prepared for offline runs and its own TMPDIR, so nothing of a run lands in the host's /tmp. */
export function makeOpencodeHome(label = 'opencode-home', version = opencodeVersion()): OpencodeHome {
  const dir = mkdtempSync(join(tmpdir(), `${label}-`))
  const configDir = join(dir, '.config', 'opencode')
  mkdirSync(join(configDir, 'node_modules'), { recursive: true })
  for (const [name, content] of Object.entries(offlineConfigFiles(version))) writeFileSync(join(configDir, name), content)
  mkdirSync(join(dir, 'tmp'))
  return { dir, env: () => ({ ...homeEnv(dir), TMPDIR: join(dir, 'tmp') }), cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

type ChatBody = { messages?: { role: string; content: unknown }[]; __aimock_truncated?: boolean }

/** The request body aimock journaled (chat completions). */
function bodyOf(entry: JournalEntry): ChatBody {
  const body = (entry.body ?? {}) as ChatBody
  if (body.__aimock_truncated) throw new RangeError(`aimock truncated the journaled body of request ${entry.id} (over 64 KB), so its messages cannot be checked. Keep the conversation in this test smaller.`)
  return body
}

/** The roles and texts of a journal entry's conversation (system prompt excluded), for history checks. */
export function conversationOf(entry: JournalEntry): { role: string; text: string }[] {
  return (bodyOf(entry).messages ?? []).filter((m) => m.role !== 'system').map((m) => ({ role: m.role, text: typeof m.content === 'string' ? m.content : '' }))
}

/** The system prompt text of a journal entry. */
export function systemTextOf(entry: JournalEntry): string {
  return (bodyOf(entry).messages ?? [])
    .filter((m) => m.role === 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n')
}

/** The names of the tools a request offered the model. */
export function toolNamesOf(entry: JournalEntry): string[] {
  const tools = ((entry.body ?? {}) as { tools?: { function?: { name?: string } }[] }).tools ?? []
  return tools.map((t) => t.function?.name ?? '').filter((name) => name !== '')
}
