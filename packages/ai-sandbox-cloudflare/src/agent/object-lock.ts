/**
 * The lock a Coordinator's drives take. Every host that reaches a run goes
 * through the run's one Coordinator Durable Object (the platform keeps one
 * live instance per object id), so a lock held in that object coordinates
 * all of them: a per-key chain in the object's memory is the distributed
 * lock here, not a single-process stand-in for one. It is its own type, so
 * withSandbox does not warn about an in-memory lock that cannot coordinate
 * hosts.
 */
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'

/** A `LockStore` scoped to one Durable Object instance (see the module comment). */
export function objectLockStore(): LockStore {
  const chains = new InMemoryLockStore()
  return { withLock: (key, fn) => chains.withLock(key, fn) }
}
