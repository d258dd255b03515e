// The SQLite stream log: the run event log kit of @tanstack/ai-sandbox/testkit
// on one connection (in-process wake-ups) and with readers on a second
// connection to the file (the poll), then what is SQLite's own: its offsets
// '0', '1', … (upsert's next-offset rule is core's planSequenceUpsert), its
// error reasons, the first-chunk deadline option, and calls after the stores
// were closed.
import { EventType, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { runStreamDurabilityConformance } from '@tanstack/ai-sandbox/testkit'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { SqliteDatabaseError, SqliteStreamError } from '../src/index.js'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

runStreamDurabilityConformance('sqlite, one connection', {
  makeStores: () => {
    const stores = dbs.open()
    return { stream: (source) => stores.stream(source) }
  },
})

runStreamDurabilityConformance('sqlite, readers on a second connection to the file', {
  makeStores: () => {
    const path = dbs.path()
    const [writer, reader] = [dbs.open({ path }), dbs.open({ path, pollMs: 5 })]
    return { stream: (source) => writer.stream(source), reader: (source) => reader.stream(source) }
  },
})

function text(delta: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta, timestamp: 1 } as StreamChunk
}

async function deltas(durability: StreamDurability, offset: string): Promise<unknown[]> {
  const out: unknown[] = []
  for await (const { chunk } of durability.read(offset)) out.push((chunk as { delta?: unknown }).delta)
  return out
}

/** The `reason` of the SqliteStreamError `call` throws or rejects with (`undefined` for anything else). */
async function streamReason(call: () => unknown): Promise<string | undefined> {
  const error = await (async () => call())().then(
    () => undefined,
    (e: unknown) => e,
  )
  return SqliteStreamError.isInstance(error) ? error.reason : undefined
}

describe('sqliteStream', () => {
  it("offsets are '0', '1', …, upsert appends only the next one, and each refusal carries its reason", async () => {
    const stores = dbs.open()
    const log = stores.stream({ runId: 'r' })
    expect(await log.append([text('a'), text('b')])).toEqual(['0', '1'])
    expect(await log.upsert([{ offset: '1', chunk: text('B') }, { offset: '2', chunk: text('c') }])).toEqual(['1', '2'])
    expect(await log.append([text('d')])).toEqual(['3'])
    expect(await streamReason(() => log.upsert([{ offset: '0', chunk: text('z') }, { offset: '5', chunk: text('gap') }]))).toBe('invalid-upsert')
    expect(await streamReason(() => deltas(log, '01'))).toBe('invalid-offset')
    expect(await streamReason(() => stores.stream({ runId: 'a\nb' }))).toBe('invalid-run-id')
  })

  it('a chunk JSON cannot hold (a BigInt, a cycle) is refused with unserializable-chunk, and nothing of its batch is stored', async () => {
    const stores = dbs.open()
    const log = stores.stream({ runId: 'json' })
    expect(await log.append([text('a')])).toEqual(['0'])
    const cyclic = { ...text('loop') } as Record<string, unknown>
    cyclic.self = cyclic
    const big = { ...text('big'), usage: 10n } as unknown as StreamChunk
    for (const bad of [big, cyclic as unknown as StreamChunk]) {
      const error = await log.append([text('kept?'), bad]).catch((e: unknown) => e)
      expect(SqliteStreamError.isInstance(error) && error.reason).toBe('unserializable-chunk')
      expect((error as Error).message).toMatch(/^Chunk 1 of the batch \(TEXT_MESSAGE_CONTENT\) cannot be stored as JSON: .*Nothing of the batch was stored\.$/)
      expect(await streamReason(() => log.upsert([{ offset: '0', chunk: text('A') }, { offset: '1', chunk: bad }]))).toBe('unserializable-chunk')
    }
    expect(await log.append([text('b')]), 'the refused batches took no offset').toEqual(['1'])
    expect((await log.snapshot()).map((entry) => (entry.chunk as { delta?: unknown }).delta), 'and replaced nothing').toEqual(['a', 'b'])
  })

  it('a run with nothing stored: a from-start join waits firstChunkDeadlineMs then throws no-data, a resume throws unknown-run; a chunk within the deadline arrives', async () => {
    const stores = dbs.open({ firstChunkDeadlineMs: 60 })
    expect(await streamReason(() => deltas(stores.stream({ runId: 'empty' }), '-1'))).toBe('no-data')
    expect(await streamReason(() => deltas(stores.stream({ runId: 'empty' }), '3'))).toBe('unknown-run')
    const patient = dbs.open({ firstChunkDeadlineMs: 5000 }).stream({ runId: 'late' })
    const seen = deltas(patient, '-1')
    await sleep(100)
    await patient.append([text('finally')])
    await patient.close()
    expect(await seen).toEqual(['finally'])
  })

  it('a closed log refuses append and upsert with log-closed, at any epoch and from another connection, and stores nothing', async () => {
    const path = dbs.path()
    const [stores, other] = [dbs.open({ path }), dbs.open({ path })]
    const log = stores.stream({ runId: 'finished' })
    expect(await log.append([text('a')])).toEqual(['0'])
    await log.close()
    const late = other.stream({ runId: 'finished' })
    for (const write of [() => log.append([text('x')]), () => late.append([text('x')]), () => late.atEpoch(1).append([text('x')]), () => late.upsert([{ offset: '1', chunk: text('x') }]), () => late.upsert([{ offset: '0', chunk: text('A') }])]) {
      const error = await write().catch((e: unknown) => e)
      expect(SqliteStreamError.isInstance(error) && error.reason).toBe('log-closed')
      expect((error as Error).message).toMatch(/run "finished" is closed/)
    }
    expect((await late.snapshot()).map((entry) => (entry.chunk as { delta?: unknown }).delta)).toEqual(['a'])
  })

  it('every call after close() throws closed', async () => {
    const stores = dbs.open()
    const log = stores.stream({ runId: 'r' })
    stores.close()
    for (const call of [() => log.append([text('a')]), () => log.snapshot(), () => log.close(), () => deltas(log, '-1')]) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(SqliteDatabaseError.isInstance(error) && error.reason).toBe('closed')
    }
  })
})
