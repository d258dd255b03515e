// The lock store kit against core's InMemoryLockStore (the lease and isHeld tests skipped, naming why), the same
// with isHeld, and a leased in-memory store shaped like the SQLite and PostgreSQL ones; then proof that each check
// fails a deliberately broken store: one that lets two holders in, one that never expires a lease, one that never
// renews, one whose release frees another holder's key, one that leaves its key to expire, one whose isHeld lies.
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import { describe, expect, it } from 'vitest'
import { SandboxConfigError } from '../../src/index.js'
import {
  checkLockExclusive,
  checkLockHandsOver,
  checkLockIsHeld,
  checkLockKeysIndependent,
  checkLockLeaseExpires,
  checkLockLeaseRenewed,
  checkLockLostHolderCannotRelease,
  LOCK_STORE_CHECKS,
  runLockStoreConformance,
  type LockStores,
} from '../../src/testkit/index.js'
import { failureOf } from '../helpers/kit-failure.js'
import { leasedLocks, type LeasedLocksFaults } from '../helpers/leased-locks.js'
import { probingLockStore } from '../helpers/probing-locks.js'

const LEASE_MS = 200

runLockStoreConformance('core InMemoryLockStore', { makeStores: () => ({ locks: new InMemoryLockStore() }) })

runLockStoreConformance('core InMemoryLockStore with isHeld', { makeStores: () => ({ locks: probingLockStore() }) })

runLockStoreConformance('a leased in-memory store, two handles', { makeStores: () => leasedLocks(LEASE_MS), leaseMs: LEASE_MS })

/** A leased store with `faults`, its timers stopped after `check`. */
async function leasedFailure(faults: LeasedLocksFaults, check: (stores: LockStores) => Promise<void>): Promise<string> {
  const stores = leasedLocks(LEASE_MS, faults)
  try {
    return await failureOf(() => check(stores))
  } finally {
    stores.close()
  }
}

const settings = { leaseMs: LEASE_MS, waitMs: 500 }

describe('the lock store kit registers every check and validates its options', () => {
  it('the table lists each exported check once, with what it needs', () => {
    expect(LOCK_STORE_CHECKS.map(([, check, needs]) => [check, needs])).toEqual([
      [checkLockExclusive, undefined],
      [checkLockHandsOver, undefined],
      [checkLockKeysIndependent, undefined],
      [checkLockIsHeld, 'isHeld'],
      [checkLockLeaseRenewed, 'lease'],
      [checkLockLeaseExpires, 'lease'],
      [checkLockLostHolderCannotRelease, 'lease'],
    ])
    expect(new Set(LOCK_STORE_CHECKS.map(([title]) => title)).size).toBe(LOCK_STORE_CHECKS.length)
  })

  it('runLockStoreConformance rejects bad options naming the field', () => {
    const makeStores = (): LockStores => ({ locks: new InMemoryLockStore() })
    expect(() => runLockStoreConformance('bad', { makeStores, leaseMs: 0 })).toThrow(/runLockStoreConformance\.leaseMs: expected a lease in ms above 0/)
    expect(() => runLockStoreConformance('bad', { makeStores, leaseMs: 10_000 })).toThrow(/runLockStoreConformance\.leaseMs: expected at most 5000 ms/)
    expect(() => runLockStoreConformance('bad', { makeStores, waitMs: -1 })).toThrow(/runLockStoreConformance\.waitMs/)
    expect(() => runLockStoreConformance('bad', { makeStores: new InMemoryLockStore() as never })).toThrow(SandboxConfigError)
    expect(() => runLockStoreConformance('bad', { makeStores, lease: 10 } as never)).toThrow(/runLockStoreConformance\.lease\b/)
  })

  it('a lease check without leaseMs, and the isHeld check on a store without it, fail naming what is missing', async () => {
    expect(await failureOf(() => checkLockLeaseExpires({ locks: new InMemoryLockStore() }))).toMatch(/checkLockLeaseExpires: needs settings\.leaseMs/)
    expect(await failureOf(() => checkLockIsHeld({ locks: new InMemoryLockStore() }))).toMatch(/has no isHeld/)
  })
})

describe('the lock store kit catches broken lock stores', () => {
  it('a store that lets every caller in (no lock at all) fails exclusion and hand-over', async () => {
    const notALock: LockStore = { withLock: (_key, fn) => fn(new AbortController().signal) }
    expect(await failureOf(() => checkLockExclusive({ locks: notALock }, settings))).toMatch(/mutual exclusion: never two callbacks inside withLock of one key at once \(up to \d+ were\)/)
    expect(await failureOf(() => checkLockHandsOver({ locks: notALock }, settings))).toMatch(/while a holder is inside fn, another withLock of the key waits/)
  })

  it('a leased store that takes a key whatever holds it lets two holders in', async () => {
    expect(await leasedFailure({ ignoresHolders: true }, (stores) => checkLockExclusive(stores, settings))).toMatch(/mutual exclusion: never two callbacks inside/)
  })

  it('a store that rejects a caller of a held key instead of waiting fails exclusion', async () => {
    const inner = new InMemoryLockStore()
    const busy = new Set<string>()
    const refusing: LockStore = {
      withLock: async (key, fn) => {
        if (busy.has(key)) throw new Error('busy')
        busy.add(key)
        try {
          return await inner.withLock(key, fn)
        } finally {
          busy.delete(key)
        }
      },
    }
    expect(await failureOf(() => checkLockExclusive({ locks: refusing }, settings))).toMatch(/withLock of a held key waits for it, it does not fail; call \d+ rejected with: Error: busy/)
  })

  it('a store that swallows the callback error fails hand-over', async () => {
    const inner = new InMemoryLockStore()
    const swallowing: LockStore = { withLock: (key, fn) => inner.withLock(key, (signal) => fn(signal).catch(() => undefined as never)) }
    expect(await failureOf(() => checkLockHandsOver({ locks: swallowing }, settings))).toMatch(/withLock rejects with the very error fn rejected with/)
  })

  it('a store whose keys ignore case makes one key wait for another', async () => {
    const inner = new InMemoryLockStore()
    const caseless: LockStore = { withLock: (key, fn) => inner.withLock(key.toLowerCase(), fn) }
    expect(await failureOf(() => checkLockKeysIndependent({ locks: caseless }, settings))).toMatch(/keys are independent.*these keys never entered while the others were held: "K"/)
  })

  it('a leased store that never expires a lease: a stopped holder keeps the key, isHeld stays true', async () => {
    expect(await leasedFailure({ neverExpires: true }, (stores) => checkLockLeaseExpires(stores, settings))).toMatch(/isHeld is false once the holder stopped for 2 × leaseMs/)
    // Without isHeld the successor is seen waiting for ever.
    const withoutProbe = (stores: LockStores): LockStores => ({ locks: { withLock: stores.locks.withLock }, peer: { withLock: stores.peer!.withLock } })
    expect(await leasedFailure({ neverExpires: true }, (stores) => checkLockLeaseExpires(withoutProbe(stores), settings))).toMatch(
      /another holder takes the key once the lease of a holder stopped for 2 × leaseMs \(400 ms\) ran out; it did not happen within 500 ms/,
    )
  })

  it('a leased store that never renews loses a live holder its key', async () => {
    expect(await leasedFailure({ noRenewal: true }, (stores) => checkLockLeaseRenewed(stores, settings))).toMatch(/a live holder's lease is renewed|its signal is not aborted/)
  })

  it("a leased store whose release deletes whoever's row frees the successor's key to a waiter", async () => {
    expect(await leasedFailure({ releasesAnyHolder: true }, (stores) => checkLockLostHolderCannotRelease(stores, settings))).toMatch(/a lost holder's release does not free the key another holder holds now/)
  })

  it('a leased store that leaves the row to expire on release fails the isHeld check', async () => {
    expect(await leasedFailure({ keepsRowOnRelease: true }, (stores) => checkLockIsHeld(stores, settings))).toMatch(/isHeld is false once fn resolved: the key is released, not left to expire/)
  })

  it('a store whose isHeld always answers false fails the isHeld check', async () => {
    const inner = probingLockStore()
    const lying = { withLock: inner.withLock, isHeld: async () => false }
    expect(await failureOf(() => checkLockIsHeld({ locks: lying }, settings))).toMatch(/isHeld is true while a holder is inside fn/)
  })
})
