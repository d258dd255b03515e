/**
 * The leased `LockStore` over the `locks` table: one row `(key, holder,
 * expires_at)` per held key, judged by the database clock, taken in one
 * upsert, renewed every `leaseMs / 3`, deleted by its own holder only.
 * Invariant: a key has at most one unexpired row whose backend still runs; a
 * holder stops before its row can expire or when its lease connection drops.
 * Design notes: docs/design/stores.md
 */
import { randomUUID } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import type { LockStore } from '@tanstack/ai/locks'
import { parseOptions, type LockProbe } from '@tanstack/ai-sandbox'
import { z } from 'zod'
import { assertOpen, contextOf, query, schemaName, type PostgresContext, type PostgresPool } from './database.js'
import { DedicatedClient } from './dedicated-client.js'
import { PostgresDatabaseError, PostgresLockLostError } from './errors.js'

/** Default lease, in ms: how long a key stays held by a holder that stopped renewing (killed, paused, cut off). */
export const DEFAULT_LEASE_MS = 10_000

/** Default cap, in ms, of the wait between two tries to take a held key. */
export const DEFAULT_LOCK_POLL_MS = 50

/** Tries to take a key in a row that may fail on a lost connection before `withLock` gives up. */
const MAX_DROPPED_TAKES = 3

/** Options of {@link postgresLockStore}. */
export interface PostgresLockStoreOptions {
  /** The schema the tables live in (default `tanstack_sandbox`). */
  schema?: string
  /** Lease in ms (default {@link DEFAULT_LEASE_MS}, at least 30); renewed every `leaseMs / 3` while the callback runs. */
  leaseMs?: number
  /** Longest wait in ms between two tries to take a held key (default {@link DEFAULT_LOCK_POLL_MS}, at least 1); the wait starts at 1 ms and doubles. */
  lockPollMs?: number
  /**
   * Take a key at once when the server backend of its holder's lease
   * connection is gone (the holder process was killed or crashed, so the
   * server closed its session), instead of waiting out the lease (default
   * `true`). A paused holder keeps its connection, so it keeps the lease rule.
   * Set `false` behind a transaction-pooling proxy (PgBouncer in transaction
   * mode), where a backend pid does not follow one client.
   */
  detectDeadHolders?: boolean
}

/** `leaseMs`: whole ms, 30 ms to one hour. Shared with `createPostgresStores`. Internal. */
export const leaseMsSchema = z.number().int('expected an integer number of milliseconds (the lock lease)').min(30, 'expected at least 30 ms').max(3_600_000, 'expected at most 3 600 000 ms (one hour)')
/** `lockPollMs`: whole ms, 1 to 60 000. Shared with `createPostgresStores`. Internal. */
export const lockPollMsSchema = z.number().int('expected an integer number of milliseconds (the lock retry interval)').min(1, 'expected at least 1 ms').max(60_000, 'expected at most 60 000 ms')

/** `detectDeadHolders`: a boolean. Shared with `createPostgresStores`. Internal. */
export const detectDeadHoldersSchema = z.boolean({ error: 'expected true or false (take a lock whose holder process is gone at once; false behind PgBouncer in transaction mode)' })

const optionsSchema = z.object({ schema: schemaName.optional(), leaseMs: leaseMsSchema.optional(), lockPollMs: lockPollMsSchema.optional(), detectDeadHolders: detectDeadHoldersSchema.optional() }).strict()

/** A lock store and the way to let go of its lease connection. Internal. */
export interface ClosableLockStore {
  readonly store: LockStore & LockProbe
  /** Abort every held lock's signal (`renewal-failed`), destroy the lease connection, and delete the held rows so another replica takes the keys at once. Never rejects. */
  close: () => Promise<void>
}

/**
 * A `LockStore` (`@tanstack/ai/locks`) whose mutual exclusion holds across
 * every process and host that reaches the same database.
 *
 * `isHeld(key)` answers whether some holder's lease on `key` has not run out
 * by the database clock and its lease connection still has a server backend
 * (`LockProbe`, what `reapDetachedRuns` asks of a run's driver lease). `withLock(key, fn)` waits until it holds `key` (retrying with a backoff from
 * 1 ms up to `lockPollMs`), then runs `fn(signal)` while renewing the lease
 * every `leaseMs / 3`. Expiry is judged by the database's clock, so the hosts'
 * clocks need not agree. `signal` aborts, with a {@link PostgresLockLostError}
 * as its reason, when the lease is lost: a renewal finds the row taken
 * (`taken`) or expired (`expired`), a renewal throws or the lease connection
 * drops (`renewal-failed`), or no renewal succeeded by shortly before the
 * lease runs out, measured on this process's monotonic clock from when the
 * last successful renewal was sent (`expired`) — so, with
 * `detectDeadHolders: false`, a running holder cut off from the database is
 * told before another can take the key (with it on, a holder whose session
 * the server ended loses the key at once and learns it up to `leaseMs`
 * later; the run data's epoch fence covers that window). A paused holder
 * (SIGSTOP, a VM pause) learns it only on its first timer turn after it runs
 * again, so a write must also be fenced where the data lives (the epoch
 * checks of the run log and record). When `fn` settles the row
 * is deleted (only if it is still this holder's) and `withLock` returns or
 * rethrows `fn`'s outcome. A holder that dies leaves its row; the server ends
 * the dead process's session, and the row names that session's backend pid,
 * so anyone takes the key at once (`detectDeadHolders`, on by default) or,
 * with the check off, once the row expires.
 *
 * The lock store keeps ONE pooled connection checked out while any
 * `withLock` of it runs (takes and renewals go through it; it goes back to
 * the pool when the last one ends).
 *
 * @param pool - A node-postgres `Pool` whose schema was migrated (`migratePostgres`).
 * @param options - `schema` (`tanstack_sandbox`), `leaseMs` (10 000), `lockPollMs` (50), `detectDeadHolders` (true).
 * @throws SandboxConfigError naming the option (e.g. `postgresLockStore.leaseMs`) when one is invalid.
 * @throws PostgresDatabaseError from `withLock` when the key cannot be taken because the database refused (`closed`, `schema-missing`, `connect-failed`, `query-failed`); `fn` is not called then.
 * @example
 * ```ts
 * const locks = postgresLockStore(pool, { leaseMs: 5000 })
 * await locks.withLock('thread-1', async (signal) => { if (!signal.aborted) await work() })
 * ```
 */
export function postgresLockStore(pool: PostgresPool, options: PostgresLockStoreOptions = {}): LockStore & LockProbe {
  const parsed = parseOptions(optionsSchema, options, 'postgresLockStore')
  return lockStoreOf(contextOf(pool, parsed.schema, 'postgresLockStore'), parsed).store
}

/** The lock store over a context, with its lease connection's `close`. Internal. */
export function lockStoreOf(ctx: PostgresContext, options: { leaseMs?: number | undefined; lockPollMs?: number | undefined; detectDeadHolders?: boolean | undefined }): ClosableLockStore {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
  const pollMs = options.lockPollMs ?? DEFAULT_LOCK_POLL_MS
  // Stop a little before the row expires, so a late timer cannot leave this holder running while another takes the key.
  const marginMs = Math.min(1000, Math.floor(leaseMs / 10))
  const t = ctx.tables
  const lease = new DedicatedClient(ctx)
  const interval = `($3::integer * interval '1 millisecond')`
  // The holder's server backend is gone: its process died and the server ended its session (a row without a pid never is).
  const backendGone = (holder: string): string =>
    options.detectDeadHolders === false
      ? 'false'
      : `(substring(${holder} from ' backend:([0-9]+)$') IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = substring(${holder} from ' backend:([0-9]+)$')::integer))`
  // Taken when absent, expired, left by a dead holder, or already this holder's (a retry after a take whose answer was lost).
  // The stored holder is `$2 backend:<pid>`, the pid of the backend running this statement (the lease connection's).
  const acquireSql = `INSERT INTO ${t.locks} AS l (key, holder, expires_at) VALUES ($1, $2 || ' backend:' || pg_backend_pid(), clock_timestamp() + ${interval})
    ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
    WHERE l.expires_at <= clock_timestamp() OR split_part(l.holder, ' ', 1) = $2 OR ${backendGone('l.holder')} RETURNING holder`
  // Renewed only while unexpired and ours; otherwise the holder now stored (the CTE's outer SELECT sees the row as it was).
  const renewSql = `WITH renewed AS (UPDATE ${t.locks} SET expires_at = clock_timestamp() + ${interval} WHERE key = $1 AND holder = $2 AND expires_at > clock_timestamp() RETURNING 1)
    SELECT (SELECT count(*) FROM renewed)::integer AS renewed, (SELECT holder FROM ${t.locks} WHERE key = $1) AS holder`

  /** The keys this store holds now, by holder id, with the way to abort each holder's signal: what `close` hands back at once. */
  const holding = new Map<string, { key: string; lose: () => void }>()

  const store: LockStore & LockProbe = {
    async isHeld(key) {
      assertOpen(ctx)
      const result = await query<{ held: boolean }>(ctx, `SELECT EXISTS (SELECT 1 FROM ${t.locks} l WHERE key = $1 AND expires_at > clock_timestamp() AND NOT ${backendGone('l.holder')}) AS held`, [key])
      return result.rows[0]?.held === true
    },
    async withLock(key, fn) {
      assertOpen(ctx)
      const holderId = randomUUID()
      // The row's holder once taken: `holderId backend:<pid>`.
      let holder: string = holderId
      const controller = new AbortController()
      let held = false
      let deadline: NodeJS.Timeout | undefined
      let renewal: NodeJS.Timeout | undefined
      const lose = (error: PostgresLockLostError): void => {
        if (controller.signal.aborted) return
        clearInterval(renewal)
        clearTimeout(deadline)
        controller.abort(error)
      }
      lease.enter()
      const stopWatching = lease.onLost((cause) => {
        if (!held) return
        lose(new PostgresLockLostError('renewal-failed', key, `The connection renewing the lease on lock ${JSON.stringify(key)} was lost (${messageOf(cause)}); another holder may take the key once it expires.`, { cause }))
      })
      try {
        let sentAt = performance.now()
        let dropped = 0
        for (let delay = 1; ; delay = Math.min(delay * 2, pollMs)) {
          sentAt = performance.now()
          try {
            const [taken] = await lease.query<{ holder: string }>(acquireSql, [key, holderId, leaseMs])
            if (taken !== undefined) {
              holder = taken.holder
              break
            }
            dropped = 0
          } catch (error) {
            // A lease connection lost while waiting is reopened (a take whose answer was lost is retried as this holder's);
            // a database that stays unreachable, or refuses the statement, fails the call.
            if (!PostgresDatabaseError.isInstance(error) || error.reason !== 'connect-failed' || ++dropped >= MAX_DROPPED_TAKES) throw error
          }
          await sleep(delay * (0.5 + Math.random()))
          assertOpen(ctx)
        }
        held = true
        holding.set(holder, { key, lose: () => lose(new PostgresLockLostError('renewal-failed', key, `The stores were closed while holding lock ${JSON.stringify(key)}; the key was handed back.`)) })
        // The row expires leaseMs after the database ran the statement, which is after `sentAt`: this deadline is never late.
        const armDeadline = (from: number): NodeJS.Timeout =>
          setTimeout(
            () => lose(new PostgresLockLostError('expired', key, `No renewal of the lease on lock ${JSON.stringify(key)} succeeded within leaseMs ${leaseMs}; this holder stops before another may take the key.`)),
            Math.max(0, from + leaseMs - marginMs - performance.now()),
          )
        deadline = armDeadline(sentAt)
        let renewing = false
        renewal = setInterval(() => {
          if (renewing || controller.signal.aborted) return
          renewing = true
          const renewSentAt = performance.now()
          lease
            .query<{ renewed: number; holder: string | null }>(renewSql, [key, holder, leaseMs])
            .then(([row]) => {
              if (controller.signal.aborted) return
              if (row?.renewed === 1) {
                clearTimeout(deadline)
                deadline = armDeadline(renewSentAt)
                return
              }
              lose(
                row?.holder != null && row.holder !== holder
                  ? new PostgresLockLostError('taken', key, `The lease on lock ${JSON.stringify(key)} was lost: another holder took the key after it expired.`)
                  : new PostgresLockLostError('expired', key, `The lease on lock ${JSON.stringify(key)} expired before it was renewed (leaseMs ${leaseMs}).`),
              )
            })
            .catch((cause: unknown) => lose(new PostgresLockLostError('renewal-failed', key, `Renewing the lease on lock ${JSON.stringify(key)} failed: ${messageOf(cause)}.`, { cause })))
            .finally(() => (renewing = false))
        }, Math.max(1, Math.floor(leaseMs / 3)))

        return await fn(controller.signal)
      } finally {
        clearInterval(renewal)
        clearTimeout(deadline)
        stopWatching()
        holding.delete(holder)
        if (held && !ctx.isClosed()) {
          // Through the pool, not the lease connection (it may be the one that failed). A failed release only delays the next holder until the row expires.
          await query(ctx, `DELETE FROM ${t.locks} WHERE key = $1 AND holder = $2`, [key, holder]).catch(() => undefined)
        }
        lease.leave()
      }
    },
  }
  return {
    store,
    close: async () => {
      // Abort every held lock's signal first, then hand the keys back, so another replica need not wait out the lease.
      const held = [...holding]
      holding.clear()
      for (const [, entry] of held) entry.lose()
      lease.fail(new Error('the stores were closed'))
      if (held.length === 0 || ctx.isClosed()) return
      await query(ctx, `DELETE FROM ${t.locks} WHERE (holder, key) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, [held.map(([holder]) => holder), held.map(([, entry]) => entry.key)]).catch(() => undefined)
    },
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
