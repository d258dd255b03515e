// The require-capability helpers: a missing optional method becomes an
// UnsupportedCapabilityError whose message matches the flag as advertised,
// and a present method is always called (so a provider's own error and hint
// reach the caller).
import { describe, expect, it } from 'vitest'
import { UnsupportedCapabilityError } from '../../src/contracts/errors.js'
import { forkSandbox, restoreSandboxSnapshot, snapshotSandbox } from '../../src/contracts/require-capability.js'
import { memoryProvider } from '../testkit/memory-provider.js'

async function rejectionOf(promise: Promise<unknown>): Promise<UnsupportedCapabilityError> {
  return promise.then(
    () => expect.fail('expected a rejection'),
    (error: unknown) => error as UnsupportedCapabilityError,
  )
}

describe('require-capability helpers', () => {
  it('a missing method with the flag false says the capability is false', async () => {
    const provider = memoryProvider()
    const handle = await provider.create()
    const error = await rejectionOf(snapshotSandbox(handle))
    expect(error).toBeInstanceOf(UnsupportedCapabilityError)
    expect(error.capability).toBe('snapshots')
    expect(error.message).toMatch(/does not support snapshot\(\) \(capability "snapshots" is false\)/)
  })

  it('a missing method with the flag true says the flag is true and the method is missing', async () => {
    const provider = memoryProvider({ flagsWithoutMethods: true })
    const handle = await provider.create()
    for (const [call, method, capability] of [
      [() => snapshotSandbox(handle), 'snapshot', 'snapshots'],
      [() => forkSandbox(handle), 'fork', 'fork'],
      [() => restoreSandboxSnapshot(provider, { snapshotId: 'x' }), 'restoreSnapshot', 'snapshots'],
    ] as const) {
      const error = await rejectionOf(call())
      expect(error).toBeInstanceOf(UnsupportedCapabilityError)
      expect(error.capability).toBe(capability)
      expect(error.message).toContain(`advertises capability "${capability}" (the flag is true) but does not implement ${method}()`)
      expect(error.message).not.toMatch(/is false/)
    }
  })

  it('a defined method is called, so its own UnsupportedCapabilityError reaches the caller', async () => {
    const provider = memoryProvider({}, { throwingOptionalMethods: true })
    const handle = await provider.create()
    expect((await rejectionOf(snapshotSandbox(handle))).method).toBe('snapshot')
    expect((await rejectionOf(forkSandbox(handle))).method).toBe('fork')
    expect((await rejectionOf(restoreSandboxSnapshot(provider, { snapshotId: 'x' }))).method).toBe('restoreSnapshot')
  })
})
