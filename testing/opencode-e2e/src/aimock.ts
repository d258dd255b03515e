/**
 * Test helpers for running the real `opencode` CLI offline against the fake
 * model (aimock, from @testing/support/fake-model and re-exported here): the
 * OpenCode config that points a provider at it, the path of the native CLI
 * binary shipped in the npm package, a private HOME (with its XDG folders)
 * per CLI run, and what the fake's journal says the CLI sent. Shared by the
 * suites, the recorder and the benchmark.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, posix } from 'node:path'
import type { JournalEntry } from '@copilotkit/aimock'
import { shellQuote } from '@tanstack/ai-sandbox'
import { installedVersion, journaledConversation, journaledMessages, makeCliHome } from '@testing/support/fake-model'

export { startFakeModel, type FakeModel, type FakeModelOptions, type FixtureSource } from '@testing/support/fake-model'

/** The model the suites ask for: provider `aimock` (see {@link providerConfig}), model `fake-model`. */
export const FAKE_MODEL = 'aimock/fake-model'

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
  return installedVersion('opencode-ai', from)
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
  const { dir, tmp, cleanup } = makeCliHome(label)
  const configDir = join(dir, '.config', 'opencode')
  mkdirSync(join(configDir, 'node_modules'), { recursive: true })
  for (const [name, content] of Object.entries(offlineConfigFiles(version))) writeFileSync(join(configDir, name), content)
  return { dir, env: () => ({ ...homeEnv(dir), TMPDIR: tmp }), cleanup }
}

/** The roles and texts of a journal entry's conversation (system prompt excluded), for history checks. */
export function conversationOf(entry: JournalEntry): { role: string; text: string }[] {
  return journaledConversation(entry)
}

/** The system prompt text of a journal entry. */
export function systemTextOf(entry: JournalEntry): string {
  return journaledMessages(entry)
    .filter((m) => m.role === 'system')
    .map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)))
    .join('\n')
}

/** The names of the tools a request offered the model. */
export function toolNamesOf(entry: JournalEntry): string[] {
  const tools = ((entry.body ?? {}) as { tools?: { function?: { name?: string } }[] }).tools ?? []
  return tools.map((t) => t.function?.name ?? '').filter((name) => name !== '')
}
