/**
 * The local-process side of the lifecycle suites: one temp root for every
 * sandbox of a file, a sandbox per test (destroyed after it), a throwaway HOME
 * for the fake Grok agent's session files, and the adapter for a fake CLI
 * playing one scenario. `registerCleanup()` wires the afterEach/afterAll
 * checks: no sandbox directory, HOME or tagged process may be left.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, expect } from 'vitest'
import { defineSandbox, type SandboxDefinition, type SandboxDefinitionInput } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { ensureFakeAgent } from '@testing/grok-build-e2e/build-fake'
import { FAKE_BIN, killLeftovers, newTag, type AdapterInput, type Harness, type Scenario } from './harnesses.js'

const fakeGrok = await ensureFakeAgent()

/** The sandboxes, HOMEs and provider of one test file. */
export interface LocalSuite {
  /** A sandbox for one test (reuse 'thread', so nothing but the run loop stops the CLI before the test ends). */
  sandbox: (id: string, extra?: { hooks?: SandboxDefinitionInput['hooks'] }) => { sandbox: SandboxDefinition; threadId: string }
  /** The adapter for `harness`'s fake CLI playing `scenario`, and the tag of its processes. */
  fake: (harness: Harness, scenario: Scenario, extra?: { env?: Record<string, string>; exitGraceMs?: number; timeoutMs?: number }) => { tag: string; adapter: any }
}

/** Make the suite's parts and register its cleanup and leftover checks. */
export function localSuite(prefix: string): LocalSuite {
  const root = mkdtempSync(join(tmpdir(), `${prefix}-`))
  const provider = localProcessSandbox({ root })
  const sandboxes: { sandbox: SandboxDefinition; threadId: string }[] = []
  const homes: string[] = []

  afterEach(async () => {
    for (const { sandbox, threadId } of sandboxes.splice(0)) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
  })

  afterAll(() => {
    const leftDirs = readdirSync(root)
    rmSync(root, { recursive: true, force: true })
    expect(leftDirs, 'every sandbox directory is removed').toEqual([])
    expect(killLeftovers(), 'no CLI process, nor any child of one, is left').toEqual([])
  })

  return {
    sandbox(id, extra = {}) {
      const entry = { sandbox: defineSandbox({ id, provider, ...(extra.hooks ? { hooks: extra.hooks } : {}) }), threadId: `t-${id}` }
      sandboxes.push(entry)
      return entry
    },
    fake(harness, scenario, extra = {}) {
      const { tag, env } = newTag()
      const input: AdapterInput = { executable: join(FAKE_BIN, harness.fake ?? ''), env: { ...env, FAKE_SCENARIO: scenario, ...extra.env }, ...(extra.exitGraceMs !== undefined ? { exitGraceMs: extra.exitGraceMs } : {}), ...(extra.timeoutMs !== undefined ? { timeoutMs: extra.timeoutMs } : {}) }
      if (harness.name === 'grok-build') {
        const home = mkdtempSync(join(tmpdir(), `${prefix}-grok-home-`))
        homes.push(home)
        input.executable = fakeGrok.launcher
        input.env = { ...env, HOME: home, XAI_API_KEY: 'xai-test-key-not-a-secret', ...(scenario === 'final-then-linger' ? { FAKE_GROK_IGNORE_EOF: '1' } : {}), ...extra.env }
      }
      return { tag, adapter: harness.adapter(input) }
    },
  }
}
