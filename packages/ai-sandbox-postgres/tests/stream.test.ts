// The PostgreSQL stream log: offsets, append/read/snapshot/close/upsert, the
// from-start join deadline, core's SSE helpers over it (compared with core's
// memoryStream where the contract is shared), the NOTIFY tail across pools
// (with the recheck backstop set far out, so only a notification can wake a
// reader), re-LISTEN after the listening connection is killed, concurrent
// appenders, bounded read paging, and the epoch fence of atEpoch.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { EventType, memoryStream, resumeServerSentEventsResponse, toServerSentEventsResponse, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { StaleEpochError } from '@tanstack/ai-sandbox'
import pg from 'pg'
import { expect, it } from 'vitest'
import { PostgresDatabaseError, PostgresStreamError, READ_PAGE_SIZE } from '../src/index.js'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

function text(delta: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta, timestamp: 1 } as StreamChunk
}

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

/** Resolves once `check()` is true (polled every 5 ms), failing after `ms`. */
async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(5)
  }
}

describePostgres('postgresStream', (url) => {
  const schemas = tempSchemas(url)

  it('append returns 0-based offsets across batches; read yields strictly after an offset and ends once closed', async () => {
    const stores = await schemas.open()
    const log = stores.stream({ runId: 'r' })
    expect(await log.append([text('a'), text('b')])).toEqual(['0', '1'])
    expect(await log.append([])).toEqual([])
    expect(await log.append([text('c')])).toEqual(['2'])
    await log.close()
    expect(await collect(log, '-1')).toEqual([
      { offset: '0', delta: 'a' },
      { offset: '1', delta: 'b' },
      { offset: '2', delta: 'c' },
    ])
    expect(await collect(log, '1')).toEqual([{ offset: '2', delta: 'c' }])
    expect(await collect(log, '2')).toEqual([])
    expect(await collect(log, 'now')).toEqual([])
  })

  it('a reader on one pool is woken by NOTIFY for appends made through another pool, and ends when that pool closes the log', async () => {
    const schema = schemas.schema()
    const writer = (await schemas.open({ schema })).stream({ runId: 'r' })
    // The backstop far out: only a notification can wake this reader in time.
    const reader = (await schemas.open({ schema, recheckMs: 600_000 })).stream({ runId: 'r' })
    await writer.append([text('first')])
    const arrivals: number[] = []
    const seen = collect(reader, '-1', undefined, () => arrivals.push(Date.now()))
    await until(() => arrivals.length === 1, 'the first chunk')
    for (const [index, delta] of ['x', 'y', 'z'].entries()) {
      const sentAt = Date.now()
      await writer.append([text(delta)])
      await until(() => arrivals.length === index + 2, `chunk ${delta}`)
      expect(arrivals.at(-1)! - sentAt, 'woken by the notification, not by the 600 s recheck').toBeLessThan(5000)
    }
    await writer.close()
    expect((await seen).map((e) => e.delta)).toEqual(['first', 'x', 'y', 'z'])
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
    const reads = ['r1', 'r2', 'r3', 'r4'].map(async (runId) => {
      await stores.stream({ runId }).append([text('a')])
      return collect(stores.stream({ runId }), '-1', controller.signal)
    })
    await sleep(200)
    const { rows } = await schemas.pool().query("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'", [appName])
    expect(rows).toHaveLength(1)
    controller.abort()
    expect((await Promise.all(reads)).map((r) => r.length)).toEqual([1, 1, 1, 1])
  })

  it('a read "now" sees only what comes after it; an aborted read ends without throwing', async () => {
    const log = (await schemas.open()).stream({ runId: 'r' })
    await log.append([text('old')])
    const seen = collect(log, 'now')
    await sleep(50)
    await log.append([text('new')])
    await log.close()
    expect(await seen).toEqual([{ offset: '1', delta: 'new' }])
    const other = (await schemas.open()).stream({ runId: 'r2' })
    await other.append([text('a')])
    const controller = new AbortController()
    const aborted = collect(other, '-1', controller.signal)
    await sleep(50)
    controller.abort()
    expect(await aborted).toEqual([{ offset: '0', delta: 'a' }])
  })

  it('concurrent appenders on separate pools get unique, gap-free offsets', async () => {
    const schema = schemas.schema()
    const writers = await Promise.all([0, 1, 2, 3].map(() => schemas.open({ schema })))
    const perWriter = 25
    const results = await Promise.all(
      writers.map(async (stores, w) => {
        const log = stores.stream({ runId: 'busy' })
        const offsets: string[] = []
        for (let i = 0; i < perWriter; i++) offsets.push(...(await log.append(i % 5 === 0 ? [text(`${w}:${i}`), text(`${w}:${i}b`)] : [text(`${w}:${i}`)])))
        return offsets
      }),
    )
    const all = results.flat().map(Number)
    expect(new Set(all).size).toBe(all.length)
    expect([...all].sort((a, b) => a - b)).toEqual(Array.from({ length: all.length }, (_, i) => i))
    // A batch's offsets are consecutive, and each writer's offsets increase.
    for (const offsets of results) expect(offsets.map(Number)).toEqual([...offsets.map(Number)].sort((a, b) => a - b))
    const snapshot = await writers[0]!.stream({ runId: 'busy' }).snapshot()
    expect(snapshot.map((e) => e.offset)).toEqual(all.sort((a, b) => a - b).map(String))
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

  it('snapshot never waits, returns a fresh array, and is [] for an unknown run', async () => {
    const stores = await schemas.open()
    expect(await stores.stream({ runId: 'nothing' }).snapshot()).toEqual([])
    const log = stores.stream({ runId: 'r' })
    await log.append([text('a'), text('b')])
    const first = await log.snapshot()
    expect(first.map((e) => e.offset)).toEqual(['0', '1'])
    first.pop()
    expect(await log.snapshot()).toHaveLength(2)
  })

  it('a run with nothing stored: a from-start join waits firstChunkDeadlineMs then throws no-data; a resume throws unknown-run', async () => {
    const stores = await schemas.open({ firstChunkDeadlineMs: 60 })
    const noData = await errorOf(collect(stores.stream({ runId: 'empty' }), '-1'))
    expect(PostgresStreamError.isInstance(noData) && noData.reason).toBe('no-data')
    const unknown = await errorOf(collect(stores.stream({ runId: 'empty' }), '3'))
    expect(PostgresStreamError.isInstance(unknown) && unknown.reason).toBe('unknown-run')
    await expect(collect(memoryStream({ runId: randomUUID() }, { firstChunkDeadlineMs: 20 }), '-1')).rejects.toThrow(/no data within/)
  })

  it('a from-start join gets a first chunk appended within the deadline, and a closed empty log ends at once', async () => {
    const stores = await schemas.open({ firstChunkDeadlineMs: 5000, recheckMs: 600_000 })
    const log = stores.stream({ runId: 'late' })
    const seen = collect(log, '-1')
    await sleep(50)
    await log.append([text('finally')])
    await log.close()
    expect((await seen).map((e) => e.delta)).toEqual(['finally'])
    const closedEmpty = stores.stream({ runId: 'closed-empty' })
    await closedEmpty.close()
    expect(await collect(closedEmpty, '-1')).toEqual([])
  })

  it('refuses an offset it did not mint and an invalid run id', async () => {
    const stores = await schemas.open()
    const log = stores.stream({ runId: 'r' })
    await log.append([text('a')])
    for (const bad of ['01', '-2', 'abc', '1.5', ' 1', 'memory:v1:r:1']) {
      const error = await errorOf(collect(log, bad))
      expect(PostgresStreamError.isInstance(error) && error.reason, bad).toBe('invalid-offset')
    }
    for (const runId of ['', 'a\nb', 'a\rb']) {
      let error: unknown
      try {
        stores.stream({ runId })
      } catch (e) {
        error = e
      }
      expect(PostgresStreamError.isInstance(error) && error.reason).toBe('invalid-run-id')
    }
  })

  it('resumeFrom and the run id come from the Request as memoryStream reads them', async () => {
    const stores = await schemas.open()
    const header = new Request('http://x.test/run?runId=q&offset=4', { headers: { 'Last-Event-ID': '7', 'X-Run-Id': 'h' } })
    const fromQuery = new Request('http://x.test/run?runId=q&offset=4')
    const producer = new Request('http://x.test/run', { method: 'POST' })
    expect(stores.stream(header).resumeFrom()).toBe('7')
    expect(stores.stream(fromQuery).resumeFrom()).toBe('4')
    expect(stores.stream(producer).resumeFrom()).toBeNull()
    expect(stores.stream({ runId: 'r', offset: '-1' }).resumeFrom()).toBe('-1')
    expect(stores.stream({ runId: 'r' }).resumeFrom()).toBeNull()
    await stores.stream(header).append([text('to h')])
    expect((await stores.stream({ runId: 'h' }).snapshot()).map((e) => e.offset)).toEqual(['0'])
    await stores.stream(fromQuery).append([text('to q')])
    expect(await stores.stream({ runId: 'q' }).snapshot()).toHaveLength(1)
  })

  it('upsert replaces stored offsets, appends the next ones, and rejects a bad batch without writing anything', async () => {
    const log = (await schemas.open()).stream({ runId: 'r' })
    await log.append([text('a'), text('b')])
    expect(await log.upsert([{ offset: '1', chunk: text('B') }, { offset: '2', chunk: text('c') }, { offset: '3', chunk: text('d') }])).toEqual(['1', '2', '3'])
    const bad: Array<Array<{ offset: string; chunk: StreamChunk }>> = [
      [{ offset: '0', chunk: text('z') }, { offset: '0', chunk: text('z') }],
      [{ offset: '0', chunk: text('z') }, { offset: '4', chunk: text('e') }, { offset: '6', chunk: text('gap') }],
      [{ offset: '0', chunk: text('z') }, { offset: 'x', chunk: text('z') }],
      // eslint-disable-next-line no-sparse-arrays
      [{ offset: '0', chunk: text('z') }, , { offset: '4', chunk: text('e') }] as Array<{ offset: string; chunk: StreamChunk }>,
    ]
    for (const entries of bad) {
      const error = await errorOf(log.upsert(entries))
      expect(PostgresStreamError.isInstance(error) && error.reason).toBe('invalid-upsert')
    }
    // All or nothing: the refused batches replaced no chunk and appended none.
    expect((await log.snapshot()).map((e) => (e.chunk as { delta: string }).delta)).toEqual(['a', 'B', 'c', 'd'])
    expect(await log.append([text('e')])).toEqual(['4'])
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

  it('every call after close() throws closed', async () => {
    const stores = await schemas.open()
    const log = stores.stream({ runId: 'r' })
    await stores.close()
    for (const call of [() => log.append([text('a')]), () => log.snapshot(), () => log.close(), () => collect(log, '-1')]) {
      const error = await errorOf(call())
      expect(PostgresDatabaseError.isInstance(error) && error.reason).toBe('closed')
    }
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

  it("core's SSE helpers: a produced run is replayed whole, from an offset, and an empty join fails as with memoryStream", async () => {
    const stores = await schemas.open()
    const runId = `run-${randomUUID()}`
    const chunks: StreamChunk[] = [
      { type: EventType.RUN_STARTED, runId, threadId: 't', timestamp: 1 } as StreamChunk,
      text('hello '),
      text('world'),
      { type: EventType.RUN_FINISHED, runId, threadId: 't', finishReason: 'stop', timestamp: 2 } as StreamChunk,
    ]
    async function* produce(): AsyncGenerator<StreamChunk> {
      yield* chunks
    }
    const post = new Request(`http://x.test/run?runId=${runId}`, { method: 'POST' })
    const produced = await toServerSentEventsResponse(produce(), { durability: { adapter: stores.stream(post) } }).text()
    const ids = [...produced.matchAll(/^id: (.+)$/gm)].map((m) => m[1])
    expect(ids).toEqual(['0', '1', '2', '3', '4']) // run.accepted marker + 4 chunks
    const whole = await resumeServerSentEventsResponse({ adapter: stores.stream(new Request(`http://x.test/run?runId=${runId}&offset=-1`)) }).text()
    expect(whole).toBe(produced)
    const rest = await resumeServerSentEventsResponse({ adapter: stores.stream(new Request(`http://x.test/run?runId=${runId}`, { headers: { 'Last-Event-ID': '2' } })) }).text()
    expect([...rest.matchAll(/^id: (.+)$/gm)].map((m) => m[1])).toEqual(['3', '4'])

    const emptyRun = `empty-${randomUUID()}`
    const pgEmpty = await resumeServerSentEventsResponse({ adapter: stores.stream(new Request(`http://x.test/run?runId=${emptyRun}&offset=-1`)) }).text()
    const memoryEmpty = await resumeServerSentEventsResponse({ adapter: memoryStream(new Request(`http://x.test/run?runId=${emptyRun}&offset=-1`)) }).text()
    const shape = (sse: string): string => sse.replaceAll(/"timestamp":\d+/g, '').replaceAll(/"message":"(?:[^"\\]|\\.)*"/g, '"message":…')
    expect(shape(pgEmpty)).toBe(shape(memoryEmpty))
    expect(pgEmpty).toMatch(/RUN_ERROR.*stored no chunk within 100ms/)
  })
})
