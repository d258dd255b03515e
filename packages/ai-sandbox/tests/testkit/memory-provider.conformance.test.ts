// Runs the whole provider kit on the in-memory fake, once fs-only and once
// with snapshots and fork: proves the kit's own wiring (shared sandboxes,
// capability gating, the UnsupportedCapabilityError checks for every false
// flag, named skips, snapshot and fork checks) passes a correct provider.
// Also: the runner refuses an `fsRaceCalls` that is not an integer 1-1 000
// and an `fsRaceBudgetMs` that is not one 0-600 000, naming the option, before
// it registers anything.
import { describe, expect, it } from 'vitest'
import { SandboxConfigError } from '../../src/contracts/errors.js'
import { runSandboxProviderConformance } from '../../src/testkit/index.js'
import { memoryProvider } from './memory-provider.js'

runSandboxProviderConformance('in-memory fake (fs only)', { makeProvider: () => memoryProvider(), timeoutMs: 10_000 })
runSandboxProviderConformance('in-memory fake (fs, snapshots, fork)', { makeProvider: () => memoryProvider({}, { snapshots: true, fork: true }), timeoutMs: 10_000 })

describe('runSandboxProviderConformance options', () => {
  it.each([0, -1, 2.5, 1_001, Number.NaN])('fsRaceCalls %s is refused with SandboxConfigError naming the option', (fsRaceCalls) => {
    let error: unknown
    try {
      runSandboxProviderConformance('never registered', { makeProvider: () => memoryProvider(), fsRaceCalls })
    } catch (thrown) {
      error = thrown
    }
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect((error as Error).message).toMatch(/fsRaceCalls must be an integer 1-1000/)
    expect(error).toMatchObject({ field: 'runSandboxProviderConformance.fsRaceCalls' })
  })

  it.each([-1, 2.5, 600_001, Number.NaN])('fsRaceBudgetMs %s is refused with SandboxConfigError naming the option', (fsRaceBudgetMs) => {
    let error: unknown
    try {
      runSandboxProviderConformance('never registered', { makeProvider: () => memoryProvider(), fsRaceBudgetMs })
    } catch (thrown) {
      error = thrown
    }
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect((error as Error).message).toMatch(/fsRaceBudgetMs must be an integer 0-600000/)
    expect(error).toMatchObject({ field: 'runSandboxProviderConformance.fsRaceBudgetMs' })
  })
})
