// The PostgreSQL stream log: the cases every store shares
// (@testing/support/store-suites/stream: unserializable chunks, a closed log,
// calls after the stores were closed); the run event log kit of
// @tanstack/ai-sandbox/testkit with writers on two pools and readers on a
// third whose recheck backstop is far out (so only a NOTIFY can wake them in
// time); then what is PostgreSQL's own: its gap-free offsets '0', '1', …
// under concurrent appenders (upsert's next-offset rule is core's
// planSequenceUpsert), its error reasons, the first-chunk deadline option,
// re-LISTEN after the listening connection is killed, one listening
// connection per pool, bounded read paging, the epoch fence of atEpoch, and
// a waiting reader ended by close().
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { StreamDurability } from '@tanstack/ai'
import { StaleEpochError } from '@tanstack/ai-sandbox'
import { runStreamDurabilityConformance } from '@tanstack/ai-sandbox/testkit'
import { reasonOf, runStreamSuite, text } from '@testing/support/store-suites/stream'
import pg from 'pg'
import { expect, it } from 'vitest'
import { PostgresDatabaseError, PostgresStreamError, READ_PAGE_SIZE } from '../src/index.js'
import { postgresTarget } from './helpers/postgres.js'

async function collect(durability: StreamDurability, offset: string, signal?: AbortSignal, onEntry?: () => void): Promise<Array<{ offset: string; delta: unknown }>> {
  const out: Array<{ offset: string; delta: unknown }> = []
  for await (const { offset: at, chunk } of durability.read(offset, signal)) {
    out.push({ offset: at, delta: (chunk as { delta?: unknown }).delta })
    onEntry?.()
  }
  return out
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  )
}

/** The `reason` of the PostgresStreamError `call` throws or rejects with (`undefined` for anything else). */
const streamReason = (call: () => unknown): Promise<string | undefined> => reasonOf(PostgresStreamError, call)

/** Resolves once `check()` is true (polled every 5 ms), failing after `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

runStreamSuite(postgresTarget, {
  own: ({ url, schemas }) => {
    runStreamDurabilityConformance('postgres, writers on two pools, readers woken only by NOTIFY on a third', {
      makeStores: async () => {
        const schema = schemas.schema()
        const first = await schemas.open({ schema })
        const [second, readers] = await Promise.all([schemas.open({ schema }), schemas.open({ schema, recheckMs: 600_000 })])
        let next = 0
        return { stream: (source) => [first, second][next++ % 2]!.stream(source), reader: (source) => readers.stream(source) }
      },
    })

    it("offsets are '0', '1', … across batches, gap-free under concurrent appenders on separate pools", async () => {
      const schema = schemas.schema()
      const writers = [await schemas.open({ schema }), ...(await Promise.all([0, 1, 2].map(() => schemas.open({ schema }))))]
      const log = writers[0]!.stream({ runId: 'r' })
      expect(await log.append([text('a'), text('b')])).toEqual(['0', '1'])
      expect(await log.append([text('c')])).toEqual(['2'])
      const results = await Promise.all(
        writers.map(async (stores, w) => {
          const offsets: string[] = []
          for (let i = 0; i < 25; i++) offsets.push(...(await stores.stream({ runId: 'busy' }).append(i % 5 === 0 ? [text(`${w}:${i}`), text(`${w}:${i}b`)] : [text(`${w}:${i}`)])))
          return offsets
        }),
      )
      const all = results.flat().map(Number)
      expect([...all].sort((a, b) => a - b)).toEqual(Array.from({ length: all.length }, (_, i) => i))
    })

    it('refusals carry their reasons: invalid-offset, invalid-run-id, invalid-upsert (a new offset must be the next), no-data after firstChunkDeadlineMs, unknown-run', async () => {
      const stores = await schemas.open({ firstChunkDeadlineMs: 60 })
      const log = stores.stream({ runId: 'r' })
      await log.append([text('a')])
      expect(await log.upsert([{ offset: '0', chunk: text('A') }, { offset: '1', chunk: text('b') }])).toEqual(['0', '1'])
      const reasons = await Promise.all([
        streamReason(() => collect(log, '01')),
        streamReason(() => stores.stream({ runId: 'a\nb' })),
        streamReason(() => log.upsert([{ offset: '3', chunk: text('gap') }])),
        streamReason(() => collect(stores.stream({ runId: 'empty' }), '-1')),
        streamReason(() => collect(stores.stream({ runId: 'empty' }), '3')),
      ])
      expect(reasons).toEqual(['invalid-offset', 'invalid-run-id', 'invalid-upsert', 'no-data', 'unknown-run'])
    })

    it('a from-start join gets a first chunk appended within firstChunkDeadlineMs', async () => {
      const log = (await schemas.open({ firstChunkDeadlineMs: 5000, recheckMs: 600_000 })).stream({ runId: 'late' })
      const seen = collect(log, '-1')
      await sleep(50)
      await log.append([text('finally')])
      await log.close()
      expect((await seen).map((e) => e.delta)).toEqual(['finally'])
    })

    it('a reader whose listening connection is killed listens again and still wakes on the next append', async () => {
      const schema = schemas.schema()
      const writer = (await schemas.open({ schema })).stream({ runId: 'r' })
      const appName = `listener-${randomUUID().slice(0, 8)}`
      const pool = new pg.Pool({ connectionString: url, application_name: appName, max: 4 })
      pool.on('error', () => undefined)
      const readerStores = await schemas.open({ schema, pool, recheckMs: 600_000 })
      try {
        const reader = readerStores.stream({ runId: 'r' })
        await writer.append([text('a')])
        const arrivals: number[] = []
        const seen = collect(reader, '-1', undefined, () => arrivals.push(Date.now()))
        await until(() => arrivals.length === 1, 'the first chunk')
        const { rows } = await schemas.pool().query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'", [appName])
        expect(rows, 'one LISTEN connection for the pool').toHaveLength(1)
        await schemas.pool().query('SELECT pg_terminate_backend($1)', [rows[0]!.pid])
        await sleep(50)
        await writer.append([text('b')])
        await until(() => arrivals.length === 2, 'the chunk appended after the listener was killed')
        const again = await schemas.pool().query("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'", [appName])
        expect(again.rows, 'listening again, on a new connection').toHaveLength(1)
        expect(again.rows[0]!.pid).not.toBe(rows[0]!.pid)
        await writer.append([text('c')])
        await until(() => arrivals.length === 3, 'the next chunk, through the new LISTEN')
        await writer.close()
        expect((await seen).map((e) => e.delta)).toEqual(['a', 'b', 'c'])
      } finally {
        await readerStores.close()
        await pool.end()
      }
    })

    it('readers of one pool share one listening connection', async () => {
      const schema = schemas.schema()
      const appName = `shared-${randomUUID().slice(0, 8)}`
      const stores = await schemas.open({ schema, connectionString: `${url}${url.includes('?') ? '&' : '?'}application_name=${appName}` })
      const controller = new AbortController()
      let received = 0
      const reads = ['r1', 'r2', 'r3', 'r4'].map(async (runId) => {
        await stores.stream({ runId }).append([text('a')])
        return collect(stores.stream({ runId }), '-1', controller.signal, () => received++)
      })
      // Every reader has its chunk, so all four are subscribed and tailing.
      await until(() => received === 4, 'the first chunk of every reader')
      const { rows } = await schemas.pool().query("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'", [appName])
      expect(rows).toHaveLength(1)
      controller.abort()
      expect((await Promise.all(reads)).map((r) => r.length)).toEqual([1, 1, 1, 1])
    })

    it(`read pages through a long log ${READ_PAGE_SIZE} rows per query; snapshot reads it all at once`, async () => {
      const stores = await schemas.open()
      const log = stores.stream({ runId: 'long' })
      const total = READ_PAGE_SIZE * 2 + 100
      for (let i = 0; i < total; i += 250) await log.append(Array.from({ length: Math.min(250, total - i) }, (_, j) => text(String(i + j))))
      await log.close()
      const counts: number[] = []
      const query = stores.pool.query.bind(stores.pool) as (...args: unknown[]) => Promise<pg.QueryResult>
      ;(stores.pool as unknown as { query: unknown }).query = async (...args: unknown[]) => {
        const result = await query(...args)
        if (typeof args[0] === 'string' && args[0].includes('LEFT JOIN LATERAL')) counts.push(result.rows.length)
        return result
      }
      const entries = await collect(log, '-1')
      expect(entries.map((e) => e.delta)).toEqual(Array.from({ length: total }, (_, i) => String(i)))
      expect(Math.max(...counts)).toBe(READ_PAGE_SIZE)
      expect(counts.length).toBeGreaterThanOrEqual(3)
      expect(await log.snapshot()).toHaveLength(total)
    })

    it('atEpoch: appends and closes only while the record holds the epoch, stores nothing when refused; a run with no record appends freely', async () => {
      const stores = await schemas.open()
      const free = stores.stream({ runId: 'no-record' })
      expect(await free.atEpoch(7).append([text('x')])).toEqual(['0'])
      expect(await free.append([text('y')])).toEqual(['1'])

      await stores.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
      const log = stores.stream({ runId: 'r' })
      expect(await log.append([text('host')])).toEqual(['0'])
      await stores.runs.update('r', { driverEpoch: 1 })
      const plain = await errorOf(log.append([text('late host')]))
      expect(plain).toBeInstanceOf(StaleEpochError)
      expect(plain).toMatchObject({ runId: 'r', epoch: undefined, storedEpoch: 1 })
      expect(await log.atEpoch(1).append([text('driver 1'), text('driver 1b')])).toEqual(['1', '2'])
      await stores.runs.update('r', { driverEpoch: 2 })
      const stale = await errorOf(log.atEpoch(1).append([text('stale'), text('stale b')]))
      expect(stale).toMatchObject({ reason: 'stale-epoch', epoch: 1, storedEpoch: 2 })
      expect(await log.atEpoch(2).append([text('driver 2')])).toEqual(['3'])
      expect((await log.snapshot()).map((e) => (e.chunk as { delta: string }).delta)).toEqual(['host', 'driver 1', 'driver 1b', 'driver 2'])
      // A stale close resolves without closing (the successor's readers go on); the holder's close ends them. The view reads the same log.
      await log.atEpoch(1).close()
      await log.close()
      const tail = collect(log.atEpoch(1), '2')
      await log.atEpoch(2).append([text('driver 2b')])
      await log.atEpoch(2).close()
      expect(await tail).toEqual([
        { offset: '3', delta: 'driver 2' },
        { offset: '4', delta: 'driver 2b' },
      ])
    })

    it('close() of the stores ends a reader that is waiting for a notification', async () => {
      const stores = await schemas.open({ recheckMs: 600_000 })
      const log = stores.stream({ runId: 'r' })
      await log.append([text('a')])
      const seen = errorOf(collect(log, '-1'))
      await sleep(100)
      await stores.close()
      const error = await seen
      expect(PostgresDatabaseError.isInstance(error) && error.reason).toBe('closed')
    })
  },
})
