// The leased PostgreSQL LockStore within one process, over several pools on
// one schema (the cross-process proofs are in multi-process.test.ts). The lock
// store kit of @tanstack/ai-sandbox/testkit proves the LockStore contract
// (exclusion, hand-over, independent keys, isHeld, renewal past the lease,
// expiry of a stopped holder's lease, a lost holder neither taking back nor
// releasing the key); the shared suite (@testing/support/store-suites/lock-store)
// the reason the signal aborts with when the key was taken or the stores
// closed, and close() handing the key back; the cases below are this store's
// own: expiry while the event loop is blocked, a waiter's lost connection,
// expiry on the database's clock, and which rows count as left by a dead holder.
import { setTimeout as sleep } from 'node:timers/promises'
import { runLockStoreConformance } from '@tanstack/ai-sandbox/testkit'
import { runLockStoreSuite } from '@testing/support/store-suites/lock-store'
import { afterAll, expect, it } from 'vitest'
import { createPostgresStores, PostgresLockLostError, type PostgresStores } from '../src/index.js'
import { postgresTarget } from './helpers/postgres.js'

/** The lease the kit runs with: short, so its lease cases take a few hundred ms each. */
const KIT_LEASE_MS = 300

async function lockRows(stores: PostgresStores): Promise<Array<{ key: string; holder: string }>> {
  return (await stores.pool.query<{ key: string; holder: string }>(`SELECT key, holder FROM "${stores.schema}".locks ORDER BY key`)).rows
}

runLockStoreSuite(postgresTarget, {
  shortLeaseMs: 300,
  // The row now names another holder, and its lease is over.
  forgeHolder: async (stores, key, holder) => void (await stores.pool.query(`UPDATE "${stores.schema}".locks SET holder = $1, expires_at = clock_timestamp() - interval '1 second' WHERE key = $2`, [holder, key])),
  holders: async (stores) => (await lockRows(stores)).map((row) => row.holder),
  own: ({ url, schemas }) => {
    // Two store sets on one schema, opened once for every case of the kit (its keys are unique per case; opening
    // and closing two pools per case would double the kit's time) and closed after the file, before its schema is dropped.
    const kitSchema = schemas.schema()
    let kitStores: Promise<PostgresStores[]> | undefined
    afterAll(async () => {
      if (kitStores) await Promise.all((await kitStores).map((stores) => stores.close()))
    })
    runLockStoreConformance('postgres, two pools on one schema', {
      makeStores: async () => {
        kitStores ??= (async () => {
          const a = await createPostgresStores({ connectionString: url, schema: kitSchema, leaseMs: KIT_LEASE_MS })
          return [a, await createPostgresStores({ connectionString: url, schema: kitSchema, leaseMs: KIT_LEASE_MS })]
        })()
        const [a, b] = await kitStores
        return { locks: a!.locks, peer: b!.locks }
      },
      leaseMs: KIT_LEASE_MS,
    })

    it('aborts with "expired" when the event loop was blocked past the lease, and a waiter takes the key meanwhile', async () => {
      const schema = schemas.schema()
      const a = await schemas.open({ schema, leaseMs: 100 })
      const b = await schemas.open({ schema, leaseMs: 100 })
      let bEntered = false
      const reason = await a.locks.withLock('k', async (signal) => {
        const spinUntil = Date.now() + 250
        while (Date.now() < spinUntil) {
          // blocked: no renewal can run, and the row expires on the database's clock
        }
        // No timer can run during the spin, so the signal is still quiet; the overdue deadline fires at the next turn.
        expect(signal.aborted).toBe(false)
        await sleep(0)
        await b.locks.withLock('k', async () => {
          bEntered = true
        })
        return signal.reason as unknown
      })
      expect(bEntered).toBe(true)
      expect(PostgresLockLostError.isInstance(reason) && reason.reason).toBe('expired')
    })

    it('a waiter whose connections the server terminates reconnects and still takes the key', async () => {
      const schema = schemas.schema()
      const holder = await schemas.open({ schema })
      const appName = `waiter-${Math.random().toString(16).slice(2, 10)}`
      const waiter = await schemas.open({ schema, connectionString: `${url}${url.includes('?') ? '&' : '?'}application_name=${appName}` })
      let release!: () => void
      const held = holder.locks.withLock('k', () => new Promise<void>((resolve) => (release = resolve)))
      await sleep(50)
      const waited = waiter.locks.withLock('k', async (signal) => signal.aborted)
      await sleep(100)
      const { rows } = await schemas.pool().query<{ ok: boolean }>('SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1', [appName])
      expect(rows.length).toBeGreaterThanOrEqual(1)
      release()
      await held
      expect(await waited).toBe(false)
      expect(await lockRows(holder)).toEqual([])
    })

    it('takes a key whose holder left a row behind once it expires on the database clock', async () => {
      const stores = await schemas.open({ leaseMs: 1000 })
      const { rows } = await stores.pool.query<{ expires: number }>(
        `INSERT INTO "${stores.schema}".locks (key, holder, expires_at) VALUES ('k', 'dead-holder', clock_timestamp() + interval '300 milliseconds') RETURNING extract(epoch FROM expires_at) * 1000 AS expires`,
      )
      const enteredAt = await stores.locks.withLock('k', async () => Date.now())
      expect(enteredAt).toBeGreaterThanOrEqual(Number(rows[0]!.expires) - 20)
      expect(await lockRows(stores)).toEqual([])
    })
    it('judges a row dead only when the backend pid it names no longer runs on the server', async () => {
      const stores = await schemas.open({ leaseMs: 60_000 })
      const live = await stores.pool.connect()
      try {
        const { rows } = await live.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
        const put = (key: string, holder: string) => stores.pool.query(`INSERT INTO "${stores.schema}".locks (key, holder, expires_at) VALUES ($1, $2, clock_timestamp() + interval '1 minute')`, [key, holder])
        await put('dead', 'a backend:2147483646')
        await put('alive', `b backend:${rows[0]!.pid}`)
        await put('older-version', 'c')
        expect(await stores.locks.isHeld('dead')).toBe(false)
        expect(await stores.locks.isHeld('alive')).toBe(true)
        expect(await stores.locks.isHeld('older-version')).toBe(true)
        expect(await stores.locks.withLock('dead', async () => (await lockRows(stores)).find((row) => row.key === 'dead')!.holder)).toMatch(/^[0-9a-f-]{36} backend:\d+$/)
        const off = await schemas.open({ schema: stores.schema, leaseMs: 60_000, detectDeadHolders: false })
        await put('dead-again', 'd backend:2147483646')
        expect(await off.locks.isHeld('dead-again')).toBe(true)
      } finally {
        live.release()
      }
    })
  },
})
