// Proves the provider conformance checks catch broken implementations: each
// case runs one exported check against the correct fake (it passes) and against
// a fake with exactly one deliberate bug (it fails, naming the broken rule).
// The store kit's counterpart is instance-store-kit.test.ts.
import { describe, expect, it } from 'vitest'
import type { SandboxHandle, SandboxProvider } from '../../src/contracts/index.js'
import {
  checkDestroyIsIdempotent,
  checkForkIsIndependent,
  checkFsList,
  checkFsPathConfinement,
  checkFsReadMissing,
  checkSnapshotRestore,
  checkUnsupportedCapability,
  createProviderConformanceContext,
} from '../../src/testkit/index.js'
import { memoryProvider, type MemoryProviderBugs } from './memory-provider.js'

async function sandbox(bugs: MemoryProviderBugs = {}): Promise<{ provider: SandboxProvider; handle: SandboxHandle }> {
  const provider = memoryProvider(bugs)
  return { provider, handle: await provider.create() }
}

describe('provider checks catch a broken provider', () => {
  it('fs.read of a missing file must be not-found', async () => {
    await expect(checkFsReadMissing((await sandbox()).handle)).resolves.toBeUndefined()
    await expect(checkFsReadMissing((await sandbox({ readMissingAsEmpty: true })).handle)).rejects.toThrow(
      /Contract violated: fs\.read of a missing file throws SandboxPathError reason "not-found"\n\s+expected a rejection, but it resolved with ""/,
    )
  })

  it('paths that leave the workspace must be refused with escape', async () => {
    await expect(checkFsPathConfinement((await sandbox()).handle)).resolves.toBeUndefined()
    await expect(checkFsPathConfinement((await sandbox({ noConfinement: true })).handle)).rejects.toThrow(
      /fs\.read\("\.\.\/x"\) is refused with SandboxPathError reason "escape"/,
    )
  })

  it('fs.list must sort entries by name', async () => {
    await expect(checkFsList((await sandbox()).handle)).resolves.toBeUndefined()
    await expect(checkFsList((await sandbox({ unsortedList: true })).handle)).rejects.toThrow(/fs\.list returns direct entries only, sorted by name/)
  })

  it('a false flag must throw UnsupportedCapabilityError, not a bare Error', async () => {
    const good = await sandbox()
    await expect(checkUnsupportedCapability('snapshots', good.handle, good.provider)).resolves.toBeUndefined()
    const broken = await sandbox({ bareErrorSnapshot: true })
    await expect(checkUnsupportedCapability('snapshots', broken.handle, broken.provider)).rejects.toThrow(
      /capabilities\(\)\.snapshots is false, so handle\.snapshot \(via snapshotSandbox\) throws UnsupportedCapabilityError\("snapshots"\)\n\s+expected .*got Error: not implemented/,
    )
  })

  it('a false flag may be kept by a defined method that throws UnsupportedCapabilityError', async () => {
    const provider = memoryProvider({}, { throwingOptionalMethods: true })
    const h = await provider.create()
    expect(typeof h.snapshot).toBe('function')
    await expect(checkUnsupportedCapability('snapshots', h, provider)).resolves.toBeUndefined()
    await expect(checkUnsupportedCapability('fork', h, provider)).resolves.toBeUndefined()
  })

  it('a true flag without its method fails saying the flag is true and the method is missing', async () => {
    for (const [check, rule] of [
      [checkSnapshotRestore, /capabilities\(\)\.snapshots is true, so handle\.snapshot is a function\n\s+the "memory" provider advertises snapshots \(the flag is true\) but handle\.snapshot is missing/],
      [checkForkIsIndependent, /capabilities\(\)\.fork is true, so handle\.fork is a function\n\s+the "memory" provider advertises fork \(the flag is true\) but handle\.fork is missing/],
    ] as const) {
      const ctx = await createProviderConformanceContext(memoryProvider({ flagsWithoutMethods: true }))
      const error = await check(ctx)
        .finally(ctx.destroyTracked)
        .then(() => undefined, (e: unknown) => e as Error)
      expect(error?.message).toMatch(rule)
      expect(error?.message).not.toMatch(/is false/)
    }
  })

  it('a destroyed sandbox must not resume', async () => {
    const good = await createProviderConformanceContext(memoryProvider())
    await expect(checkDestroyIsIdempotent(good).finally(good.destroyTracked)).resolves.toBeUndefined()
    const broken = await createProviderConformanceContext(memoryProvider({ resumeDestroyed: true }))
    await expect(checkDestroyIsIdempotent(broken).finally(broken.destroyTracked)).rejects.toThrow(/provider\.resume\(\{ id \}\) of a destroyed sandbox returns null/)
  })
})
