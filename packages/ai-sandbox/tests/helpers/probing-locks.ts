/**
 * Core's in-memory lock store that also answers `isHeld` (`LockProbe`) for
 * the keys its callers hold now, as the SQLite and PostgreSQL lock stores do.
 * What the orphan tests need of a lock store. It asserts nothing itself.
 */
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import type { LockProbe } from '../../src/index.js'

/** A lock store that answers `isHeld` for the keys its callers hold now. */
export function probingLockStore(): LockStore & LockProbe {
  const inner = new InMemoryLockStore()
  const held = new Set<string>()
  return {
    isHeld: async (key) => held.has(key),
    withLock: (key, fn) =>
      inner.withLock(key, async (signal) => {
        held.add(key)
        try {
          return await fn(signal)
        } finally {
          held.delete(key)
        }
      }),
  }
}
