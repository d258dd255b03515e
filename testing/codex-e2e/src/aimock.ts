/**
 * Test helpers for running the real `codex` CLI offline: the fake model of
 * @testing/support/fake-model behind the namespace proxy Codex's Responses
 * requests need, the path of the installed native CLI binary, a private
 * HOME/CODEX_HOME per CLI run whose config.toml points Codex at the fake, the
 * same settings as `-c` overrides for sandboxes where no file can be prepared
 * (Docker), and what the fake's journal says the CLI sent.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { JournalEntry } from '@copilotkit/aimock'
import { installedVersion, journaledMessages, makeCliHome, startFakeModel as startAimock, type FakeModel as Aimock, type FixtureSource } from '@testing/support/fake-model'
import { startNamespaceProxy } from './namespace-proxy.js'

export type { FixtureSource } from '@testing/support/fake-model'

/** Options of {@link startFakeModel}. */
export interface FakeModelOptions {
  /** `{{name}}` placeholders replaced in every string of the fixtures (e.g. `{ marker: '300.1' }`). */
  vars?: Record<string, string>
  /** Address the proxy listens on. Default `127.0.0.1`; the Docker suite passes the bridge's host address. */
  host?: string
}

/** A running fake model, as Codex reaches it: through the proxy (`url`, `port`), with aimock's journal (`requests`). */
export interface FakeModel extends Aimock {
  /** Every request body as Codex sent it (Responses API), oldest first; the journal leaves out fields such as `text.format`. */
  bodies: () => unknown[]
}

/**
 * Start aimock on 127.0.0.1 with a free port, serving `source`, behind the
 * namespace proxy (see `namespace-proxy.ts`), which listens on `options.host`.
 * Codex wants `<url>/v1`.
 * @returns The running fake; call `stop()` when done (it closes the proxy, then aimock).
 * @throws when a fixture file cannot be read or a fixture is invalid (aimock's validation message).
 * @example
 * ```ts
 * const model = await startFakeModel([{ match: { userMessage: 'hi' }, response: { content: 'Hello.' } }])
 * try { ... } finally { await model.stop() }
 * ```
 */
export async function startFakeModel(source: FixtureSource, options: FakeModelOptions = {}): Promise<FakeModel> {
  const mock = await startAimock(source, { vars: options.vars })
  const proxy = await startNamespaceProxy(mock.url, options.host).catch(async (error: unknown) => {
    await mock.stop()
    throw error
  })
  let stopped: Promise<void> | undefined
  return { ...mock, url: proxy.url, port: proxy.port, bodies: () => proxy.bodies(), stop: () => (stopped ??= proxy.stop().then(() => mock.stop())) }
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
  return installedVersion('@openai/codex', from)
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
  const { dir, tmp, cleanup } = makeCliHome(label)
  const codexHome = join(dir, '.codex')
  mkdirSync(codexHome)
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
    env: () => ({ HOME: dir, CODEX_HOME: codexHome, TMPDIR: tmp, [FAKE_KEY_ENV]: 'test-key-not-a-secret' }),
    cleanup,
  }
}

/** Codex's own context messages (environment, AGENTS.md, skills), which are not the user's words. */
const CONTEXT_MESSAGE = /^(<environment_context>|<user_instructions>|# AGENTS\.md instructions|<skills_instructions>)/

/** The user's prompts in a journal entry (aimock shows the Responses input as chat messages), Codex's context messages left out. */
export function userTexts(entry: JournalEntry): string[] {
  return journaledMessages(entry).filter((m) => m.role === 'user' && typeof m.content === 'string' && !CONTEXT_MESSAGE.test(m.content)).map((m) => m.content as string)
}

/** Every message text of a journal entry, for "did X reach the model" checks. */
export function allTexts(entry: JournalEntry): string {
  return JSON.stringify(journaledMessages(entry))
}

/** The names of the tools a journal entry offered the model. */
export function toolNames(entry: JournalEntry): string[] {
  const tools = ((entry.body ?? {}) as { tools?: { name?: string; function?: { name?: string } }[] }).tools ?? []
  return tools.map((t) => t.function?.name ?? t.name ?? '')
}
