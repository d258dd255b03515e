// The leased SQLite LockStore within one process, over two connections to one
// file (the cross-process proofs are in multi-process.test.ts). The lock store
// kit of @tanstack/ai-sandbox/testkit proves the LockStore contract (exclusion,
// hand-over, independent keys, isHeld, renewal past the lease, expiry of a
// stopped holder's lease, a lost holder neither taking back nor releasing the
// key); the shared suite (@testing/support/store-suites/lock-store) the reason
// the signal aborts with when the key was taken or the database closed, and
// close() handing the key back; the cases below are this store's own: expiry
// while the event loop is blocked, rows another holder left behind, and which
// rows count as left by a dead holder.
import { spawnSync } from 'node:child_process'
import { runLockStoreConformance } from '@tanstack/ai-sandbox/testkit'
import { runLockStoreSuite } from '@testing/support/store-suites/lock-store'
import { expect, it } from 'vitest'
import { SqliteLockLostError, type SqliteStores } from '../src/index.js'
import { sqliteTarget, tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

/** The lease the kit runs with: short, so its lease cases take a few hundred ms each. */
const KIT_LEASE_MS = 200

runLockStoreConformance('sqlite, two connections to one file', {
  makeStores: () => {
    const path = dbs.path()
    // tempDatabases closes both after each case.
    return { locks: dbs.open({ path, leaseMs: KIT_LEASE_MS }).locks, peer: dbs.open({ path, leaseMs: KIT_LEASE_MS }).locks }
  },
  leaseMs: KIT_LEASE_MS,
})

function lockRows(stores: SqliteStores): Array<{ key: string; holder: string; expires_at: number }> {
  return stores.db.prepare('SELECT key, holder, expires_at FROM locks ORDER BY key').all() as Array<{ key: string; holder: string; expires_at: number }>
}

runLockStoreSuite(sqliteTarget, {
  shortLeaseMs: 60,
  forgeHolder: (stores, key, holder) => void stores.db.prepare('UPDATE locks SET holder = ? WHERE key = ?').run(holder, key),
  holders: (stores) => lockRows(stores).map((row) => row.holder),
  own: () => {
    it('aborts with "expired" when the event loop was blocked past the lease, and a waiter takes the key meanwhile', async () => {
      const path = dbs.path()
      const a = dbs.open({ path, leaseMs: 60 })
      const b = dbs.open({ path, leaseMs: 60 })
      const reason = await a.locks.withLock('k', async (signal) => {
        const spinUntil = Date.now() + 150
        while (Date.now() < spinUntil) {
          // blocked: no renewal can run
        }
        // The lease is gone in the file; another connection takes the key before this holder's timers run.
        await b.locks.withLock('k', async () => undefined)
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        return signal.reason as unknown
      })
      expect(SqliteLockLostError.isInstance(reason) && reason.reason).toBe('expired')
    })

    it('takes a key whose holder left an expired row behind', async () => {
      const stores = dbs.open({ leaseMs: 1000 })
      const expiresAt = Date.now() + 100
      stores.db.prepare('INSERT INTO locks (key, holder, expires_at) VALUES (?, ?, ?)').run('k', 'dead-holder', expiresAt)
      const enteredAt = await stores.locks.withLock('k', async () => Date.now())
      expect(enteredAt).toBeGreaterThanOrEqual(expiresAt)
      expect(lockRows(stores)).toEqual([])
    })
    it('judges a row dead only when it names a pid of this machine and pid namespace that no longer runs', async () => {
      const stores = dbs.open({ leaseMs: 60_000 })
      let holder = ''
      await stores.locks.withLock('probe', async () => {
        holder = lockRows(stores)[0]!.holder
      })
      expect(holder).toMatch(new RegExp(` pid:${process.pid} scope:[0-9a-f]{16}$`))
      const deadPid = spawnSync('true').pid!
      const put = (key: string, who: string): void => void stores.db.prepare('INSERT INTO locks (key, holder, expires_at) VALUES (?, ?, ?)').run(key, who, Date.now() + 60_000)
      put('dead', holder.replace(` pid:${process.pid} `, ` pid:${deadPid} `))
      put('other-scope', holder.replace(` pid:${process.pid} `, ` pid:${deadPid} `).replace(/scope:[0-9a-f]{16}$/, 'scope:0000000000000000'))
      put('older-version', 'a0b1c2d3-0000-4000-8000-000000000000')
      put('alive', holder.replace(` pid:${process.pid} `, ` pid:${process.ppid} `))
      expect(await stores.locks.isHeld('dead')).toBe(false)
      expect(await stores.locks.isHeld('other-scope')).toBe(true)
      expect(await stores.locks.isHeld('older-version')).toBe(true)
      expect(await stores.locks.isHeld('alive')).toBe(true)
      expect(await stores.locks.withLock('dead', async () => 'taken at once')).toBe('taken at once')
      const off = dbs.open({ path: stores.db.name, leaseMs: 60_000, detectDeadHolders: false })
      put('dead-again', holder.replace(` pid:${process.pid} `, ` pid:${deadPid} `))
      expect(await off.locks.isHeld('dead-again')).toBe(true)
    })
  },
})
