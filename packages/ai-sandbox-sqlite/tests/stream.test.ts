// The SQLite stream log: offsets, append/read/snapshot/close/upsert, the
// from-start join deadline, and core's SSE helpers over it, compared with
// core's memoryStream where the contract is shared.
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { EventType, memoryStream, resumeServerSentEventsResponse, toServerSentEventsResponse, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { SqliteDatabaseError, SqliteStreamError } from '../src/index.js'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

function text(delta: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta, timestamp: 1 } as StreamChunk
}

async function collect(durability: StreamDurability, offset: string, signal?: AbortSignal): Promise<Array<{ offset: string; delta: unknown }>> {
  const out: Array<{ offset: string; delta: unknown }> = []
  for await (const { offset: at, chunk } of durability.read(offset, signal)) out.push({ offset: at, delta: (chunk as { delta?: unknown }).delta })
  return out
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  )
}

describe('sqliteStream', () => {
  it('append returns 0-based offsets across batches; read yields strictly after an offset and ends once closed', async () => {
    const stores = dbs.open()
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

  it('read tails appends from another connection until close', async () => {
    const path = dbs.path()
    const writer = dbs.open({ path }).stream({ runId: 'r' })
    const reader = dbs.open({ path, pollMs: 5 }).stream({ runId: 'r' })
    await writer.append([text('first')])
    const seen = collect(reader, '-1')
    for (const delta of ['x', 'y', 'z']) {
      await sleep(15)
      await writer.append([text(delta)])
    }
    await sleep(15)
    await writer.close()
    expect((await seen).map((e) => e.delta)).toEqual(['first', 'x', 'y', 'z'])
  })

  it('a read "now" sees only what comes after it', async () => {
    const log = dbs.open().stream({ runId: 'r' })
    await log.append([text('old')])
    const seen = collect(log, 'now')
    await sleep(5)
    await log.append([text('new')])
    await log.close()
    expect(await seen).toEqual([{ offset: '1', delta: 'new' }])
  })

  it('an aborted read ends without throwing', async () => {
    const log = dbs.open().stream({ runId: 'r' })
    await log.append([text('a')])
    const controller = new AbortController()
    const seen = collect(log, '-1', controller.signal)
    await sleep(20)
    controller.abort()
    expect(await seen).toEqual([{ offset: '0', delta: 'a' }])
  })

  it('snapshot never waits, returns a fresh array, and is [] for an unknown run', async () => {
    const stores = dbs.open()
    expect(await stores.stream({ runId: 'nothing' }).snapshot()).toEqual([])
    const log = stores.stream({ runId: 'r' })
    await log.append([text('a'), text('b')])
    const first = await log.snapshot()
    expect(first.map((e) => e.offset)).toEqual(['0', '1'])
    first.pop()
    expect(await log.snapshot()).toHaveLength(2)
  })

  it('a run with nothing stored: a from-start join waits firstChunkDeadlineMs then throws no-data; a resume throws unknown-run', async () => {
    const stores = dbs.open({ firstChunkDeadlineMs: 60 })
    const noData = await errorOf(collect(stores.stream({ runId: 'empty' }), '-1'))
    expect(SqliteStreamError.isInstance(noData) && noData.reason).toBe('no-data')
    const unknown = await errorOf(collect(stores.stream({ runId: 'empty' }), '3'))
    expect(SqliteStreamError.isInstance(unknown) && unknown.reason).toBe('unknown-run')
    // memoryStream fails the same two ways.
    await expect(collect(memoryStream({ runId: randomUUID() }, { firstChunkDeadlineMs: 20 }), '-1')).rejects.toThrow(/no data within/)
    await expect(collect(memoryStream({ runId: randomUUID() }), 'memory:v1:x:3')).rejects.toThrow(/Unknown or expired/)
  })

  it('a from-start join gets a first chunk appended within the deadline, and a closed empty log ends at once', async () => {
    const stores = dbs.open({ firstChunkDeadlineMs: 5000 })
    const log = stores.stream({ runId: 'late' })
    const seen = collect(log, '-1')
    await sleep(30)
    await log.append([text('finally')])
    await log.close()
    expect((await seen).map((e) => e.delta)).toEqual(['finally'])
    const closedEmpty = stores.stream({ runId: 'closed-empty' })
    await closedEmpty.close()
    expect(await collect(closedEmpty, '-1')).toEqual([])
  })

  it('refuses an offset it did not mint and an invalid run id', async () => {
    const stores = dbs.open()
    const log = stores.stream({ runId: 'r' })
    await log.append([text('a')])
    for (const bad of ['01', '-2', 'abc', '1.5', ' 1', 'memory:v1:r:1']) {
      const error = await errorOf(collect(log, bad))
      expect(SqliteStreamError.isInstance(error) && error.reason, bad).toBe('invalid-offset')
    }
    for (const runId of ['', 'a\nb', 'a\rb']) {
      let error: unknown
      try {
        stores.stream({ runId })
      } catch (e) {
        error = e
      }
      expect(SqliteStreamError.isInstance(error) && error.reason).toBe('invalid-run-id')
    }
  })

  it('resumeFrom and the run id come from the Request as memoryStream reads them', async () => {
    const stores = dbs.open()
    const header = new Request('http://x.test/run?runId=q&offset=4', { headers: { 'Last-Event-ID': '7', 'X-Run-Id': 'h' } })
    const fromQuery = new Request('http://x.test/run?runId=q&offset=4')
    const producer = new Request('http://x.test/run', { method: 'POST' })
    expect(stores.stream(header).resumeFrom()).toBe('7')
    expect(stores.stream(fromQuery).resumeFrom()).toBe('4')
    expect(stores.stream(producer).resumeFrom()).toBeNull()
    expect(memoryStream(producer).resumeFrom()).toBeNull()
    expect(stores.stream({ runId: 'r', offset: '-1' }).resumeFrom()).toBe('-1')
    expect(stores.stream({ runId: 'r' }).resumeFrom()).toBeNull()
    // The run id: X-Run-Id wins over ?runId.
    await stores.stream(header).append([text('to h')])
    expect((await stores.stream({ runId: 'h' }).snapshot()).map((e) => e.offset)).toEqual(['0'])
    await stores.stream(fromQuery).append([text('to q')])
    expect(await stores.stream({ runId: 'q' }).snapshot()).toHaveLength(1)
  })

  it('upsert replaces stored offsets, appends the next ones, and rejects a bad batch without writing', async () => {
    const log = dbs.open().stream({ runId: 'r' })
    await log.append([text('a'), text('b')])
    expect(await log.upsert([{ offset: '1', chunk: text('B') }, { offset: '2', chunk: text('c') }, { offset: '3', chunk: text('d') }])).toEqual(['1', '2', '3'])
    const bad: Array<Array<{ offset: string; chunk: StreamChunk }>> = [
      [{ offset: '0', chunk: text('z') }, { offset: '0', chunk: text('z') }],
      [{ offset: '0', chunk: text('z') }, { offset: '5', chunk: text('gap') }],
      [{ offset: '0', chunk: text('z') }, { offset: 'x', chunk: text('z') }],
      // eslint-disable-next-line no-sparse-arrays
      [{ offset: '0', chunk: text('z') }, , { offset: '4', chunk: text('e') }] as Array<{ offset: string; chunk: StreamChunk }>,
    ]
    for (const entries of bad) {
      const error = await errorOf(log.upsert(entries))
      expect(SqliteStreamError.isInstance(error) && error.reason).toBe('invalid-upsert')
    }
    expect((await log.snapshot()).map((e) => (e.chunk as { delta: string }).delta)).toEqual(['a', 'B', 'c', 'd'])
    expect(await log.append([text('e')])).toEqual(['4'])
  })

  it('every call after close() throws closed', async () => {
    const stores = dbs.open()
    const log = stores.stream({ runId: 'r' })
    stores.close()
    for (const call of [() => log.append([text('a')]), () => log.snapshot(), () => log.close(), () => collect(log, '-1')]) {
      const error = await errorOf(call())
      expect(SqliteDatabaseError.isInstance(error) && error.reason).toBe('closed')
    }
  })

  it("core's SSE helpers: a produced run is replayed whole, from an offset, and an empty join fails as with memoryStream", async () => {
    const stores = dbs.open()
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
    const sqliteEmpty = await resumeServerSentEventsResponse({ adapter: stores.stream(new Request(`http://x.test/run?runId=${emptyRun}&offset=-1`)) }).text()
    const memoryEmpty = await resumeServerSentEventsResponse({ adapter: memoryStream(new Request(`http://x.test/run?runId=${emptyRun}&offset=-1`)) }).text()
    // The same SSE error event; only the message's wording is the adapter's own.
    const shape = (sse: string): string => sse.replaceAll(/"timestamp":\d+/g, '').replaceAll(/"message":"(?:[^"\\]|\\.)*"/g, '"message":…')
    expect(shape(sqliteEmpty)).toBe(shape(memoryEmpty))
    expect(sqliteEmpty).toMatch(/RUN_ERROR.*stored no chunk within 100ms/)
  })
})
