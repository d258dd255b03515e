/**
 * The lock store cases a store package shares beyond the lock store kit of
 * @tanstack/ai-sandbox/testkit (which each package runs with its own store
 * sets): the reason a holder's signal aborts with when another holder has the
 * key and when the stores are closed under it, and close() handing a held key
 * back at once. The package's own cases (expiry, rows a dead holder left, its
 * lost connections) join the same describe block.
 */
import { expect, it } from 'vitest'
import type { StorePlaces, StoreTarget, SuiteStores } from './target.js'

/** What the lock store suite needs from the package beyond its target. */
export interface LockStoreSuiteHooks<S extends SuiteStores, P extends StorePlaces<S>> {
  /** A lease short enough that the 'taken' and 'renewal-failed' cases take a fraction of a second, long enough for the store's round trips. */
  shortLeaseMs: number
  /** Forge what a successor does after the lease expired: the row of `key` now names `holder`. */
  forgeHolder(stores: S, key: string, holder: string): void | Promise<void>
  /** The holder of every lock row, ordered by key. */
  holders(stores: S): string[] | Promise<string[]>
  /** Register the package's own cases in the same describe block. */
  own?(places: P): void
}

/** Register the lock store cases (see the module header) as the describe block `<prefix>LockStore`. */
export function runLockStoreSuite<S extends SuiteStores, P extends StorePlaces<S>>(target: StoreTarget<S, P>, hooks: LockStoreSuiteHooks<S, P>): void {
  const { lockLost, database } = target.errors
  target.describe(`${target.prefix}LockStore`, (places) => {
    it('aborts the signal with reason "taken" when another holder has the key, and releases only its own row', async () => {
      const stores = await places.open({ leaseMs: hooks.shortLeaseMs })
      const reason = await stores.locks.withLock('k', async (signal) => {
        await hooks.forgeHolder(stores, 'k', 'someone-else')
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        return signal.reason as unknown
      })
      expect(lockLost.isInstance(reason) && reason.reason).toBe('taken')
      // Release removed nothing that was not its own.
      expect(await hooks.holders(stores)).toEqual(['someone-else'])
    })

    it('aborts with "renewal-failed" when the stores are closed under a holder; later calls throw closed', async () => {
      const stores = await places.open({ leaseMs: hooks.shortLeaseMs })
      const reason = await stores.locks.withLock('k', async (signal) => {
        await stores.close()
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        return signal.reason as unknown
      })
      expect(lockLost.isInstance(reason) && reason.reason).toBe('renewal-failed')
      const error = await stores.locks.withLock('k', async () => undefined).catch((e: unknown) => e)
      expect(database.isInstance(error) && error.reason).toBe('closed')
    })

    it(`close() hands a held key back at once: a waiter on ${target.words.peer} takes it well before the lease ends`, async () => {
      const place = places.place()
      const [a, b] = [await places.open({ place, leaseMs: 20_000 }), await places.open({ place, leaseMs: 20_000 })]
      let entered!: () => void
      const inside = new Promise<void>((resolve) => (entered = resolve))
      const held = a.locks.withLock('handed-back', async (signal) => {
        entered()
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        return signal.aborted
      })
      await inside
      const started = Date.now()
      const waiter = b.locks.withLock('handed-back', async () => Date.now() - started)
      await new Promise((resolve) => setTimeout(resolve, 100))
      await a.close()
      expect(await held, "the holder's signal aborted").toBe(true)
      expect(await waiter, 'the waiter took the key long before the 20 s lease ran out').toBeLessThan(5000)
    })

    hooks.own?.(places)
  })
}
