/**
 * The leased `LockStore` over the `locks` table: one row `(key, holder,
 * expires_at)` per held key, taken inside `BEGIN IMMEDIATE` when absent,
 * expired or left by a holder process that is gone (`holder-identity.ts`),
 * renewed while the callback runs, deleted by its own holder only.
 * Invariant: a key has at most one row whose holder may still run, so at most
 * one holder.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import type { LockStore } from '@tanstack/ai/locks'
import type { LockProbe } from '@tanstack/ai-sandbox'
import { assertOpen, type SqliteDatabase } from './database.js'
import { SqliteLockLostError } from './errors.js'
import { isDeadHolder, newHolderId } from './holder-identity.js'

/** Default lease, in ms: how long a key stays held by a holder that stopped renewing (killed, paused). */
export const DEFAULT_LEASE_MS = 10_000

/** Default cap, in ms, of the wait between two tries to take a held key. */
export const DEFAULT_LOCK_POLL_MS = 25

/** Options of {@link sqliteLockStore}. */
export interface SqliteLockStoreOptions {
  /** Lease in ms (default {@link DEFAULT_LEASE_MS}); renewed every `leaseMs / 3` while the callback runs. */
  leaseMs?: number
  /** Longest wait in ms between two tries to take a held key (default {@link DEFAULT_LOCK_POLL_MS}); the wait starts at 1 ms and doubles. */
  pollMs?: number
  /**
   * Take a key at once when its holder was a process of this machine (and pid
   * namespace) that is gone, instead of waiting out its lease (default
   * `true`). A killed host's run is then taken over in well under a second; a
   * paused holder (SIGSTOP, a VM pause) still runs, so it keeps the lease rule.
   * `false` keeps the plain lease rule: every takeover waits out `leaseMs`.
   */
  detectDeadHolders?: boolean
}

/** The locks held through each database now, by holder id, with the way to abort each holder's signal: what `releaseHeldLocks` hands back. */
const holdings = new WeakMap<SqliteDatabase, Map<string, { key: string; lose: () => void }>>()

/**
 * Abort the signal of every lock held through `db` and delete their rows, so
 * another process takes the keys at once instead of after the lease. Called by
 * `createSqliteStores`'s `close()` before the connection closes. Internal.
 */
export function releaseHeldLocks(db: SqliteDatabase): void {
  const held = holdings.get(db)
  if (!held || held.size === 0) return
  const entries = [...held]
  held.clear()
  for (const [, entry] of entries) entry.lose()
  if (!db.open) return
  const release = db.prepare<[string, string]>('DELETE FROM locks WHERE key = ? AND holder = ?')
  for (const [holder, entry] of entries) {
    try {
      release.run(entry.key, holder)
    } catch {
      // The row then expires after the lease, as when the process dies.
    }
  }
}

interface LockRow {
  holder: string
  expires_at: number
}

/**
 * A `LockStore` (`@tanstack/ai/locks`) whose mutual exclusion holds across
 * every process that opens the same database file.
 *
 * `isHeld(key)` answers whether some holder's lease on `key` has not run
 * out (`LockProbe`, what `reapDetachedRuns` asks of a run's driver lease).
 * `withLock(key, fn)` waits until it holds `key` (retrying with a backoff from
 * 1 ms up to `pollMs`), then runs `fn(signal)` while renewing the lease every
 * `leaseMs / 3`. `signal` aborts, with a {@link SqliteLockLostError} as its
 * reason, when the lease is lost: a renewal finds the row gone, held by another
 * holder or expired, a renewal throws, or no renewal succeeded by shortly
 * before the lease runs out. When `fn` settles the row is deleted (only if it
 * is still this holder's), and `withLock` returns or rethrows `fn`'s outcome. A
 * holder that dies (SIGKILL, OOM, a crash) leaves its row; another process
 * of the same machine and pid namespace sees from the row that the holder's
 * pid no longer runs and takes the key at once (`detectDeadHolders`, on by
 * default); any other process takes it once it expires `leaseMs` later.
 * `isHeld` answers false for such a row too. Clocks: `Date.now()` of each
 * process, which on one host is one clock.
 *
 * @param db - An open database from `openSqliteDatabase`.
 * @throws SqliteDatabaseError `closed` when the database is closed before the key is taken.
 */
export function sqliteLockStore(db: SqliteDatabase, options: SqliteLockStoreOptions = {}): LockStore & LockProbe {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
  const pollMs = options.pollMs ?? DEFAULT_LOCK_POLL_MS
  const detectDead = options.detectDeadHolders ?? true
  /** The row still binds: unexpired, and its holder may still run. */
  const binds = (row: LockRow | undefined, now: number): boolean => row !== undefined && row.expires_at > now && !(detectDead && isDeadHolder(row.holder))
  // Abort a little before the row expires, so a late timer cannot leave this holder running while another takes the key.
  const marginMs = Math.min(1000, Math.floor(leaseMs / 10))
  const select = db.prepare<[string], LockRow>('SELECT holder, expires_at FROM locks WHERE key = ?')
  const put = db.prepare<[string, string, number]>('INSERT OR REPLACE INTO locks (key, holder, expires_at) VALUES (?, ?, ?)')
  const renew = db.prepare<[number, string, string, number]>('UPDATE locks SET expires_at = ? WHERE key = ? AND holder = ? AND expires_at > ?')
  const release = db.prepare<[string, string]>('DELETE FROM locks WHERE key = ? AND holder = ?')
  const acquire = db.transaction((key: string, holder: string, now: number): boolean => {
    if (binds(select.get(key), now)) return false
    put.run(key, holder, now + leaseMs)
    return true
  })

  const tryAcquire = (key: string, holder: string, now: number): boolean => {
    assertOpen(db)
    try {
      return acquire.immediate(key, holder, now)
    } catch (error) {
      // Another process kept the write lock past busy_timeout: the key is contended, try again later.
      if (isBusy(error)) return false
      throw error
    }
  }

  return {
    async isHeld(key) {
      assertOpen(db)
      return binds(select.get(key), Date.now())
    },
    async withLock(key, fn) {
      const holder = newHolderId()
      let acquiredAt = Date.now()
      for (let delay = 1; !tryAcquire(key, holder, acquiredAt); delay = Math.min(delay * 2, pollMs)) {
        await sleep(delay * (0.5 + Math.random()))
        acquiredAt = Date.now()
      }

      const controller = new AbortController()
      const lose = (error: SqliteLockLostError): void => {
        if (controller.signal.aborted) return
        clearInterval(renewal)
        clearTimeout(deadline)
        controller.abort(error)
      }
      const armDeadline = (expiresAt: number): NodeJS.Timeout =>
        setTimeout(
          () => lose(new SqliteLockLostError('expired', key, `The lease on lock ${JSON.stringify(key)} ran out before it could be renewed (leaseMs ${leaseMs}); another holder may take it.`)),
          Math.max(0, expiresAt - marginMs - Date.now()),
        )
      let deadline = armDeadline(acquiredAt + leaseMs)
      let held = holdings.get(db)
      if (held === undefined) holdings.set(db, (held = new Map()))
      held.set(holder, { key, lose: () => lose(new SqliteLockLostError('renewal-failed', key, `The stores were closed while holding lock ${JSON.stringify(key)}; the key was handed back.`)) })
      const renewal = setInterval(() => {
        const now = Date.now()
        try {
          assertOpen(db)
          if (renew.run(now + leaseMs, key, holder, now).changes === 1) {
            clearTimeout(deadline)
            deadline = armDeadline(now + leaseMs)
            return
          }
          const row = select.get(key)
          lose(
            row !== undefined && row.holder !== holder
              ? new SqliteLockLostError('taken', key, `The lease on lock ${JSON.stringify(key)} was lost: another holder took the key after it expired.`)
              : new SqliteLockLostError('expired', key, `The lease on lock ${JSON.stringify(key)} expired before it was renewed (leaseMs ${leaseMs}).`),
          )
        } catch (cause) {
          lose(new SqliteLockLostError('renewal-failed', key, `Renewing the lease on lock ${JSON.stringify(key)} failed: ${cause instanceof Error ? cause.message : String(cause)}.`, { cause }))
        }
      }, Math.max(1, Math.floor(leaseMs / 3)))

      try {
        return await fn(controller.signal)
      } finally {
        holdings.get(db)?.delete(holder)
        clearInterval(renewal)
        clearTimeout(deadline)
        // A failed release only delays the next holder until the row expires.
        if (db.open) {
          try {
            release.run(key, holder)
          } catch {
            // ignored: see above
          }
        }
      }
    },
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'SQLITE_BUSY' || code === 'SQLITE_BUSY_SNAPSHOT' || code === 'SQLITE_LOCKED'
}
