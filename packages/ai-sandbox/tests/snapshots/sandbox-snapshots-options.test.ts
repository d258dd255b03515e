// Option checks of createSandboxSnapshots and memorySandboxSnapshots found by a new user: a key the
// function ignores is refused under its own name, and latest/list check the thread id.
import { describe, expect, it } from 'vitest'
import { createInMemorySandboxPersistence, memorySandboxSnapshots, SandboxConfigError, SandboxSnapshotError } from '../../src/index.js'

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => expect.unreachable('expected a rejection'), (error: unknown) => error)
}

describe('snapshot options', () => {
  it('memorySandboxSnapshots refuses a persistence it would ignore, naming itself', async () => {
    const error = await rejection(memorySandboxSnapshots({ persistence: createInMemorySandboxPersistence() } as never))
    expect(SandboxConfigError.isInstance(error) && error.message).toMatch(/^Invalid option memorySandboxSnapshots/)
  })

  it('latest and list refuse a thread id that is not a non-empty string', async () => {
    const snapshots = await memorySandboxSnapshots()
    for (const bad of ['', 5, undefined, {}]) {
      expect(SandboxConfigError.isInstance(await rejection(snapshots.latest(bad as never)))).toBe(true)
      expect(SandboxConfigError.isInstance(await rejection(snapshots.list(bad as never)))).toBe(true)
    }
    expect(await snapshots.latest('t')).toBeNull()
  })

  it('blobs.put refuses bytes under another content\'s SHA-256', async () => {
    const { stores } = createInMemorySandboxPersistence()
    const error = await rejection(stores.blobs.put('0'.repeat(64), new TextEncoder().encode('x')))
    expect(SandboxSnapshotError.isInstance(error) && error.reason).toBe('blob-mismatch')
  })
})
