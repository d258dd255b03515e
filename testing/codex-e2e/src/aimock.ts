/**
 * Test helpers for running the real `codex` CLI offline: a fake OpenAI
 * Responses model (aimock, in-process, on 127.0.0.1 and a free port), the
 * path of the installed native CLI binary, a private HOME/CODEX_HOME per CLI
 * run whose config.toml points Codex at the fake, and the same settings as
 * `-c` overrides for sandboxes where no file can be prepared (Docker). Every
 * helper that creates something returns the way to remove it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { LLMock, type FixtureFileEntry, type JournalEntry } from '@copilotkit/aimock'
import { startNamespaceProxy } from './namespace-proxy.js'

/** Fixtures: a fixture file path, a parsed `{ fixtures }` file, or the entries themselves. */
export type FixtureSource = string | { fixtures: FixtureFileEntry[] } | FixtureFileEntry[]

/** Options of {@link startFakeModel}. */
export interface FakeModelOptions {
  /** `{{name}}` placeholders replaced in every string of the fixtures (e.g. `{ marker: '300.1' }`). */
  vars?: Record<string, string>
  /** Address to listen on. Default `127.0.0.1`; the Docker suite passes the bridge's host address. */
  host?: string
}

/** A running fake model. */
export interface FakeModel {
  /** Base URL, e.g. `http://127.0.0.1:39211` (Codex wants `<url>/v1`). */
  readonly url: string
  /** The port it listens on (for a URL with another host name, e.g. `host.docker.internal`). */
  readonly port: number
  /** The journal: every request the fake answered, oldest first. */
  requests: () => JournalEntry[]
  /** Every request body as Codex sent it (Responses API), oldest first; the journal leaves out fields such as `text.format`. */
  bodies: () => unknown[]
  /** Close the server. Safe to call twice. */
  stop: () => Promise<void>
}

/**
 * Start aimock on 127.0.0.1 with a free port, serving `source`, behind the
 * namespace proxy (see `namespace-proxy.ts`), which listens on `options.host`.
 * @returns The running fake; call `stop()` when done.
 * @throws when a fixture file cannot be read or a fixture is invalid (aimock's validation message).
 * @example
 * ```ts
 * const model = await startFakeModel([{ match: { userMessage: 'hi' }, response: { content: 'Hello.' } }])
 * try { ... } finally { await model.stop() }
 * ```
 */
export async function startFakeModel(source: FixtureSource, options: FakeModelOptions = {}): Promise<FakeModel> {
  const fixtures = substitute(readFixtures(source), options.vars ?? {})
  const mock = new LLMock({ port: 0, host: '127.0.0.1', logLevel: 'silent', journalMaxEntries: 0 })
  mock.addFixturesFromJSON(fixtures)
  const proxy = await startNamespaceProxy(await mock.start(), options.host).catch(async (error: unknown) => {
    await mock.stop()
    throw error
  })
  let stopped: Promise<void> | undefined
  return { url: proxy.url, port: proxy.port, requests: () => mock.getRequests(), bodies: () => proxy.bodies(), stop: () => (stopped ??= proxy.stop().then(() => mock.stop())) }
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

/** The folder of the Linux x64 native build shipped inside `@openai/codex` (`bin/codex`, `codex-resources/`, `codex-path/`). */
export function codexVendorDir(from: string = import.meta.url): string {
  const main = createRequire(from).resolve('@openai/codex/package.json')
  const platform = createRequire(main).resolve('@openai/codex-linux-x64/package.json')
  return join(dirname(platform), 'vendor', 'x86_64-unknown-linux-musl')
}

/** The native, statically linked `codex` binary (no node needed to run it). */
export function codexBinary(from: string = import.meta.url): string {
  return join(codexVendorDir(from), 'bin', 'codex')
}

/** The installed CLI version, e.g. `0.171.0` (from its package.json). */
export function codexVersion(from: string = import.meta.url): string {
  const packageJson = createRequire(from).resolve('@openai/codex/package.json')
  return (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version
}

/** The model id every fixture answers to, and the provider id the fake is registered under. */
export const FAKE_MODEL = 'gpt-5.5'
const PROVIDER = 'fake'
/** The variable the fake provider reads its key from. */
export const FAKE_KEY_ENV = 'FAKE_OPENAI_API_KEY'

/**
 * The provider settings that point Codex at `baseUrl` (`<fake url>/v1`), as
 * `-c` overrides for `codexText(model, { config })`: Responses wire format, no
 * retries (the fake answers errors at once), no plugins, no analytics.
 */
export function fakeProviderConfig(baseUrl: string): Record<string, string | number | boolean> {
  return {
    model_provider: PROVIDER,
    [`model_providers.${PROVIDER}.name`]: PROVIDER,
    [`model_providers.${PROVIDER}.base_url`]: baseUrl,
    [`model_providers.${PROVIDER}.env_key`]: FAKE_KEY_ENV,
    [`model_providers.${PROVIDER}.wire_api`]: 'responses',
    [`model_providers.${PROVIDER}.request_max_retries`]: 0,
    [`model_providers.${PROVIDER}.stream_max_retries`]: 0,
  }
}

/** A private HOME with its CODEX_HOME for CLI runs; threads live here, so resume needs the same one. */
export interface CodexHome {
  readonly dir: string
  /** `$HOME/.codex`, with a config.toml pointing at the fake model. */
  readonly codexHome: string
  /** The environment for a CLI run: HOME, CODEX_HOME, TMPDIR and the fake key. */
  env: () => Record<string, string>
  /** Remove the directory and everything the CLI left in it. */
  cleanup: () => void
}

/**
 * Make a HOME for the CLI under the OS temp dir, with `.codex/config.toml`
 * pointing at `modelUrl` (as TESTING.md describes: a `model_providers` table,
 * plugins and analytics off).
 */
export function makeCodexHome(modelUrl: string, label = 'codex-home'): CodexHome {
  const dir = mkdtempSync(join(tmpdir(), `${label}-`))
  const codexHome = join(dir, '.codex')
  mkdirSync(codexHome)
  mkdirSync(join(dir, 'tmp'))
  const toml = [
    `model = "${FAKE_MODEL}"`,
    `model_provider = "${PROVIDER}"`,
    '',
    `[model_providers.${PROVIDER}]`,
    `name = "${PROVIDER}"`,
    `base_url = "${modelUrl}/v1"`,
    `env_key = "${FAKE_KEY_ENV}"`,
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
    '[features]',
    'plugins = false',
    '',
    '[analytics]',
    'enabled = false',
    '',
  ].join('\n')
  writeFileSync(join(codexHome, 'config.toml'), toml)
  return {
    dir,
    codexHome,
    env: () => ({ HOME: dir, CODEX_HOME: codexHome, TMPDIR: join(dir, 'tmp'), [FAKE_KEY_ENV]: 'test-key-not-a-secret' }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}

type ChatBody = { messages?: { role: string; content: unknown }[]; __aimock_truncated?: boolean }

function bodyOf(entry: JournalEntry): ChatBody {
  const body = (entry.body ?? {}) as ChatBody
  if (body.__aimock_truncated) throw new RangeError(`aimock truncated the journaled body of request ${entry.id} (over 64 KB), so its messages cannot be checked. Keep the conversation in this test smaller.`)
  return body
}

/** Codex's own context messages (environment, AGENTS.md, skills), which are not the user's words. */
const CONTEXT_MESSAGE = /^(<environment_context>|<user_instructions>|# AGENTS\.md instructions|<skills_instructions>)/

/** The user's prompts in a journal entry (aimock shows the Responses input as chat messages), Codex's context messages left out. */
export function userTexts(entry: JournalEntry): string[] {
  return (bodyOf(entry).messages ?? []).filter((m) => m.role === 'user' && typeof m.content === 'string' && !CONTEXT_MESSAGE.test(m.content)).map((m) => m.content as string)
}

/** Every message text of a journal entry, for "did X reach the model" checks. */
export function allTexts(entry: JournalEntry): string {
  return JSON.stringify(bodyOf(entry).messages ?? [])
}

/** The names of the tools a journal entry offered the model. */
export function toolNames(entry: JournalEntry): string[] {
  const tools = ((entry.body ?? {}) as { tools?: { name?: string; function?: { name?: string } }[] }).tools ?? []
  return tools.map((t) => t.function?.name ?? t.name ?? '')
}
