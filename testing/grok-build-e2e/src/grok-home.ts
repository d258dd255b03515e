/**
 * A throwaway HOME for one fake Grok Build run on the host: the fake's
 * launcher linked at `$HOME/.grok/bin/grok` (where the adapter looks first),
 * and a place for the fake's session files. The caller removes it.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FakeAgent } from './build-fake.js'

/** A HOME directory with the fake CLI installed in it. */
export interface GrokHome {
  readonly dir: string
  /** The CLI environment: this HOME and a dummy API key (omit the key with `{ apiKey: false }`). */
  env: (options?: { apiKey?: boolean }) => Record<string, string>
  cleanup: () => void
}

/**
 * Make a HOME under the system temp folder with `.grok/bin/grok` → the fake's launcher.
 * @example
 * ```ts
 * const home = makeGrokHome(await ensureFakeAgent(), 'grok-e2e-home'); try { … } finally { home.cleanup() }
 * ```
 */
export function makeGrokHome(fake: FakeAgent, prefix = 'grok-home'): GrokHome {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`))
  mkdirSync(join(dir, '.grok', 'bin'), { recursive: true })
  symlinkSync(fake.launcher, join(dir, '.grok', 'bin', 'grok'))
  return {
    dir,
    env: (options = {}) => ({ HOME: dir, ...(options.apiKey === false ? {} : { XAI_API_KEY: 'xai-test-key-not-a-secret' }) }),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}
