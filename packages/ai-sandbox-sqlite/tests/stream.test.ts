// The SQLite stream log: the run event log kit of @tanstack/ai-sandbox/testkit
// on one connection (in-process wake-ups) and with readers on a second
// connection to the file (the poll); the cases every store shares
// (@testing/support/store-suites/stream: unserializable chunks, a closed log,
// calls after the stores were closed); then what is SQLite's own: its offsets
// '0', '1', … (upsert's next-offset rule is core's planSequenceUpsert), its
// error reasons and the first-chunk deadline option.
import type { StreamDurability } from '@tanstack/ai'
import { runStreamDurabilityConformance } from '@tanstack/ai-sandbox/testkit'
import { reasonOf, runStreamSuite, text } from '@testing/support/store-suites/stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { expect, it } from 'vitest'
import { SqliteStreamError } from '../src/index.js'
import { sqliteTarget, tempDatabases } from './helpers/temp-db.js'

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

async function deltas(durability: StreamDurability, offset: string): Promise<unknown[]> {
  const out: unknown[] = []
  for await (const { chunk } of durability.read(offset)) out.push((chunk as { delta?: unknown }).delta)
  return out
}

/** The `reason` of the SqliteStreamError `call` throws or rejects with (`undefined` for anything else). */
const streamReason = (call: () => unknown): Promise<string | undefined> => reasonOf(SqliteStreamError, call)

runStreamSuite(sqliteTarget, {
  own: () => {
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
  },
})
