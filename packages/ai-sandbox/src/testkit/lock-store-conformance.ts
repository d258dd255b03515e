/**
 * `runLockStoreConformance`: the `LockStore` contract of `@tanstack/ai/locks`
 * as a vitest suite (the checks are `lock-store/cases.ts`, each also exported
 * as a plain function). It checks mutual exclusion per key, the lease's
 * `signal`, and what core relies on beside it, and nothing a store chooses
 * for itself. Design notes: docs/design/testkit.md.
 * Source: `@tanstack/ai` 0.58.0 `activities/chat/middleware/locks.d.ts`.
 */
import type { LockStore } from '@tanstack/ai/locks'
import { describe, it } from 'vitest'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { checkLockExclusive, checkLockHandsOver, checkLockIsHeld, checkLockKeysIndependent, checkLockLeaseExpires, checkLockLeaseRenewed, checkLockLostHolderCannotRelease } from './lock-store/cases.js'
import { DEFAULT_WAIT_MS, probeOf, type LockStoreCheckEntry, type LockStoreCheckSettings, type LockStoreConformanceOptions } from './lock-store/context.js'

export { checkLockExclusive, checkLockHandsOver, checkLockIsHeld, checkLockKeysIndependent, checkLockLeaseExpires, checkLockLeaseRenewed, checkLockLostHolderCannotRelease } from './lock-store/cases.js'
export type { LockStoreCheck, LockStoreCheckEntry, LockStoreCheckSettings, LockStoreConformanceOptions, LockStores } from './lock-store/context.js'

/** Every check of the kit, in the order the suite runs them. A check with a third element needs `isHeld` on the store, or `leaseMs` (`lease`). */
export const LOCK_STORE_CHECKS: ReadonlyArray<LockStoreCheckEntry> = [
  ['one holder at a time: concurrent withLock calls of one key never overlap, and each waits instead of failing', checkLockExclusive],
  ["a settled callback hands the key over; withLock settles with fn's own value or error", checkLockHandsOver],
  ['keys are independent and exact (case, suffixes, unicode, 1000+ characters)', checkLockKeysIndependent],
  ['isHeld is true while a holder is inside, through either handle, and false once it settled', checkLockIsHeld, 'isHeld'],
  ['a holder that keeps running keeps the key past leaseMs, its signal quiet', checkLockLeaseRenewed, 'lease'],
  ["a stopped holder's lease runs out: another holder takes the key and the stopped holder's signal aborts", checkLockLeaseExpires, 'lease'],
  ['a holder that lost its lease neither takes the key back nor releases it', checkLockLostHolderCannotRelease, 'lease'],
]

const optionsSchema = z
  .object({
    makeStores: z.custom<LockStoreConformanceOptions['makeStores']>((v) => typeof v === 'function', { message: 'expected makeStores() returning { locks, peer?, close? }' }),
    leaseMs: z
      .number()
      .int('expected an integer number of milliseconds (the lease of the stores under test)')
      .positive('expected a lease in ms above 0')
      .max(5000, 'expected at most 5000 ms (the lease checks block the event loop for 2 × leaseMs: give the stores under test a short lease)')
      .optional(),
    waitMs: z.number().int().positive('expected a wait in ms above 0').optional(),
    timeoutMs: z.number().int().positive('expected a timeout in ms above 0').optional(),
  })
  .strict()

const isLockStore = (v: unknown): boolean => typeof v === 'object' && v !== null && typeof (v as Partial<LockStore>).withLock === 'function'
const storesSchema = z.object({
  locks: z.custom<LockStore>(isLockStore, { message: 'expected a LockStore (withLock(key, fn))' }),
  peer: z.custom<LockStore>(isLockStore, { message: 'expected a second LockStore handle on the same keys, or nothing' }).optional(),
  close: z.custom<() => void>((v) => typeof v === 'function', { message: 'expected a function, or nothing' }).optional(),
})

/**
 * Register the lock store kit as a vitest `describe` block: one test per
 * entry of {@link LOCK_STORE_CHECKS}. The `isHeld` test is skipped, naming
 * the method, on a store without it; the three lease tests are skipped,
 * naming `leaseMs`, when it is not given (core's `InMemoryLockStore` has no
 * lease). `makeStores` runs before each test and `close` after it. Keys are
 * unique per case, so a shared database is fine. Over a lease of 150 ms the
 * suite takes one to three seconds.
 *
 * @param name - Shown in the block title, e.g. `sqlite`.
 * @param options - `makeStores` (required), `leaseMs` (the stores' lease; no default: without it the lease tests are skipped), `waitMs` per wait inside a case (default 5000), `timeoutMs` per case (default 30 000).
 * @throws SandboxConfigError naming the option when one is invalid, and (in a test) `runLockStoreConformance.makeStores()` when what `makeStores` returned has no `locks.withLock`.
 * @example
 * ```ts
 * import { runLockStoreConformance } from '@tanstack/ai-sandbox/testkit'
 * import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'
 *
 * runLockStoreConformance('sqlite', {
 *   makeStores: () => {
 *     const [a, b] = [createSqliteStores({ path: './kit.db', leaseMs: 150 }), createSqliteStores({ path: './kit.db', leaseMs: 150 })]
 *     return { locks: a.locks, peer: b.locks, close: () => (a.close(), b.close()) }
 *   },
 *   leaseMs: 150,
 * })
 * ```
 */
export function runLockStoreConformance(name: string, options: LockStoreConformanceOptions): void {
  const parsed = parseOptions(optionsSchema, options, 'runLockStoreConformance')
  const timeoutMs = parsed.timeoutMs ?? 30_000
  const settings: LockStoreCheckSettings = { waitMs: parsed.waitMs ?? DEFAULT_WAIT_MS, ...(parsed.leaseMs === undefined ? {} : { leaseMs: parsed.leaseMs }) }
  describe(`lock store conformance: ${name}`, () => {
    for (const [title, check, needs] of LOCK_STORE_CHECKS) {
      it(
        title,
        async (context) => {
          if (needs === 'lease' && settings.leaseMs === undefined) context.skip('no leaseMs given (a lease-backed store declares its lease; core InMemoryLockStore has none)')
          const stores = await options.makeStores()
          try {
            parseOptions(storesSchema, stores, 'runLockStoreConformance.makeStores()')
            if (needs === 'isHeld' && !probeOf(stores.locks)) context.skip('the store has no isHeld (LockProbe, optional; consumers feature-detect it)')
            await check(stores, settings)
          } finally {
            await stores.close?.()
          }
        },
        timeoutMs,
      )
    }
  })
}
