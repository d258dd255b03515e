// Several real OS processes on one PostgreSQL schema (tests/fixtures/store-child.ts):
// two contenders are never inside one key at once; a holder killed with
// SIGKILL is taken over at once (its session's backend is gone), or once its
// lease expires with detectDeadHolders off; a holder paused with SIGSTOP
// past its lease loses the key to the other process and, after SIGCONT, its
// signal aborts; a reader in one process tails what another appends, woken by
// NOTIFY, until it closes; processes racing snapshot appends on one head or
// for one free snapshot lease have one winner (those cases are the shared suite's,
// @testing/support/store-suites/multi-process); a holder whose connections
// the server terminates (pg_terminate_backend) sees its signal abort. Every
// child is killed and reaped after its test.
import { fileURLToPath } from 'node:url'
import { runMultiProcessSuite } from '@testing/support/store-suites/multi-process'
import { expect, it } from 'vitest'
import { postgresTarget, type PostgresPlaces } from './helpers/postgres.js'

/** A migrated schema the children share. */
const shared = async (places: PostgresPlaces): Promise<string> => (await places.open()).schema

async function lockRow(places: PostgresPlaces, schema: string, key: string): Promise<{ holder: string; expires: number } | undefined> {
  const { rows } = await places.schemas.pool().query<{ holder: string; expires: number }>(`SELECT holder, extract(epoch FROM expires_at) * 1000 AS expires FROM "${schema}".locks WHERE key = $1`, [key])
  return rows[0] ? { holder: rows[0].holder, expires: Number(rows[0].expires) } : undefined
}

runMultiProcessSuite(postgresTarget, {
  fixture: fileURLToPath(new URL('./fixtures/store-child.ts', import.meta.url)),
  shared,
  at: ({ url }, schema) => ({ url, schema }),
  lockRow,
  deadHolder: 'the server ended its session, whose backend its row names',
  holderPattern: () => / backend:\d+$/,
  expiryLeaseMs: 1500,
  stopLeaseMs: 1000,
  // The local deadline (expired) or the first renewal (taken), whichever runs first after the resume.
  stopLostReasons: ['expired', 'taken'],
  // Expiry on the database's clock (this host's): 20 ms for rounding of the two readings.
  clockSlackMs: 20,
  tailWake: 'woken by NOTIFY',
  own: (places, { start }) => {
    it("a holder whose connections the server terminates (pg_terminate_backend) sees its signal abort well before the lease's end", async () => {
      const { url, schemas } = places
      const schema = await shared(places)
      const leaseMs = 30_000
      const holder = start({ role: 'hold', url, schema, key: 'k', leaseMs })
      const acquired = await holder.next('acquired')
      const { rows } = await schemas.pool().query<{ terminated: boolean }>('SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = $1', [`pgchild-${acquired.pid}`])
      expect(rows.length).toBeGreaterThanOrEqual(1)
      expect(rows.every((row) => row.terminated)).toBe(true)
      const lost = await holder.next('lost')
      expect(lost.reason).toBe('renewal-failed')
      expect(lost.at - acquired.at).toBeLessThan(leaseMs / 2)
      await holder.next('exit')
      // Its release went through a fresh pooled connection: the key is free at once, not after the lease.
      expect(await lockRow(places, schema, 'k')).toBeUndefined()
    })
  },
})
