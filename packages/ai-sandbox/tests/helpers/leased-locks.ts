/**
 * A leased lock store in memory, shaped like the SQLite and PostgreSQL ones:
 * one row `{ holder, expiresAt }` per held key, taken when absent or expired,
 * renewed every `leaseMs / 3` while `fn` runs, the signal aborted when a
 * renewal finds the row lost or the lease is about to run out, and the row
 * deleted by its own holder only. Two handles (`locks`, `peer`) share the
 * rows, as two connections share a database. The `broken` flags each remove
 * one of those rules, for the tests proving the lock store kit catches it.
 * It asserts nothing itself.
 */
import type { LockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LockProbe } from '../../src/index.js'

/** The rules a deliberately broken store drops. */
export interface LeasedLocksFaults {
  /** Take a key even while another holder's row binds: two holders at once. */
  ignoresHolders?: boolean
  /** A row never expires: a stopped holder keeps the key for ever. */
  neverExpires?: boolean
  /** Never renew: a live holder's lease runs out under it. */
  noRenewal?: boolean
  /** Delete the key's row on release whoever holds it now. */
  releasesAnyHolder?: boolean
  /** Leave the row on release, to expire after the lease. */
  keepsRowOnRelease?: boolean
}

/** Two handles on one set of leased locks, and `close()`, which stops every waiter and renewal. */
export function leasedLocks(leaseMs: number, faults: LeasedLocksFaults = {}): { locks: LockStore & LockProbe; peer: LockStore & LockProbe; close: () => void } {
  const rows = new Map<string, { holder: string; expiresAt: number }>()
  const timers = new Set<NodeJS.Timeout>()
  let closed = false
  const binds = (key: string, now: number): boolean => {
    const row = rows.get(key)
    return row !== undefined && (faults.neverExpires === true || row.expiresAt > now)
  }
  const marginMs = Math.floor(leaseMs / 10)
  const handle = (): LockStore & LockProbe => ({
    isHeld: async (key) => binds(key, Date.now()),
    async withLock(key, fn) {
      const holder = randomUUID()
      while (faults.ignoresHolders !== true && binds(key, Date.now())) {
        if (closed) throw new Error('the leased locks were closed')
        await sleep(1 + Math.random() * 4)
      }
      rows.set(key, { holder, expiresAt: Date.now() + leaseMs })
      const controller = new AbortController()
      const lose = (why: string): void => {
        clearInterval(renewal)
        clearTimeout(deadline)
        controller.abort(new Error(why))
      }
      const arm = (expiresAt: number): NodeJS.Timeout => {
        const timer = setTimeout(() => lose('expired'), Math.max(0, expiresAt - marginMs - Date.now()))
        timers.add(timer)
        return timer
      }
      let deadline = arm(Date.now() + leaseMs)
      const renewal = setInterval(() => {
        const row = rows.get(key)
        const now = Date.now()
        if (row?.holder !== holder || row.expiresAt <= now) return lose(row && row.holder !== holder ? 'taken' : 'expired')
        if (faults.noRenewal === true) return
        row.expiresAt = now + leaseMs
        clearTimeout(deadline)
        deadline = arm(row.expiresAt)
      }, Math.max(1, Math.floor(leaseMs / 3)))
      timers.add(renewal)
      try {
        return await fn(controller.signal)
      } finally {
        clearInterval(renewal)
        clearTimeout(deadline)
        if (faults.keepsRowOnRelease !== true && (faults.releasesAnyHolder === true || rows.get(key)?.holder === holder)) rows.delete(key)
      }
    },
  })
  return {
    locks: handle(),
    peer: handle(),
    close: () => {
      closed = true
      for (const timer of timers) clearTimeout(timer)
    },
  }
}
