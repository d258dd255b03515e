// The journal kit on core's own fakes: the in-memory fake has no exec, so
// every case is reported skipped naming the capability; the naive host
// provider (real `sh` children on the host) advertising killableProcesses:
// false runs the exec cases by polling and skips the follow cases naming that
// flag, a setting no provider of ours has. The kit's full follow run over real
// shells is the local-process provider's suite (the same host shells, so it is
// not repeated here). Journals go to a temp folder that is checked empty
// afterwards, and no process of the naive provider is left.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import type { SandboxCapabilities, SandboxProvider } from '../../src/contracts/index.js'
import { runJournalConformance } from '../../src/testkit/index.js'
import { memoryProvider } from './memory-provider.js'
import { naiveHostProvider, naiveTaggedProcesses } from './naive-host-provider.js'

const root = mkdtempSync(join(tmpdir(), 'journal-kit-test-'))
const tag = randomUUID()

/** The provider with some capability flags turned off, on the provider and on every handle. */
function withFlags(provider: SandboxProvider, flags: Partial<SandboxCapabilities>): SandboxProvider {
  const capabilities = { ...provider.capabilities(), ...flags }
  return { ...provider, capabilities: () => capabilities, create: async (input) => ({ ...(await provider.create(input)), capabilities }) }
}

runJournalConformance('in-memory fake (no exec)', { makeProvider: () => memoryProvider() })
runJournalConformance('naive host provider, poll only', { makeProvider: () => withFlags(naiveHostProvider(tag), { killableProcesses: false }), journalDir: join(root, 'poll') })

afterAll(async () => {
  const dir = join(root, 'poll')
  expect(existsSync(dir) ? readdirSync(dir) : [], 'no journal is left').toEqual([])
  rmSync(root, { recursive: true, force: true })
  // Every agent and every tail of the kit has ended (agents wait for markers at most 20 s, but each case lets its agent finish).
  expect(await naiveTaggedProcesses(tag), 'no process of the naive provider is left').toEqual([])
})
