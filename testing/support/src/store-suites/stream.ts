/**
 * The stream log cases a store package shares: a chunk JSON cannot hold is
 * refused with `unserializable-chunk` and nothing of its batch is stored; a
 * closed log refuses every write, at any epoch and from another store set;
 * every call after the stores were closed throws `closed`. The run event log
 * kit of @tanstack/ai-sandbox/testkit and the package's own cases (offsets,
 * first-chunk deadline, wake-ups) stay in its stream.test.ts.
 */
import { EventType, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { expect, it } from 'vitest'
import type { StoreErrorClass, StorePlaces, StoreTarget, SuiteStores } from './target.js'

/** What the stream suite needs from the package beyond its target. */
export interface StreamSuiteHooks<P> {
  /** Register the package's own cases in the same describe block. */
  own?(places: P): void
}

/** A TEXT_MESSAGE_CONTENT chunk carrying `delta`. */
export function text(delta: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta, timestamp: 1 } as StreamChunk
}

/** The `reason` of the `errorClass` error `call` throws or rejects with (`undefined` for anything else, or none). */
export async function reasonOf(errorClass: StoreErrorClass, call: () => unknown): Promise<string | undefined> {
  const error = await (async () => call())().then(
    () => undefined,
    (e: unknown) => e,
  )
  return errorClass.isInstance(error) ? error.reason : undefined
}

/** The deltas `durability` yields after `offset`, until it ends. */
async function deltas(durability: StreamDurability, offset: string): Promise<unknown[]> {
  const out: unknown[] = []
  for await (const { chunk } of durability.read(offset)) out.push((chunk as { delta?: unknown }).delta)
  return out
}

/** Register the stream log cases (see the module header) as the describe block `<prefix>Stream`. */
export function runStreamSuite<S extends SuiteStores, P extends StorePlaces<S>>(target: StoreTarget<S, P>, hooks: StreamSuiteHooks<P> = {}): void {
  const { stream: streamError, database: databaseError } = target.errors
  target.describe(`${target.prefix}Stream`, (places) => {
    it('a chunk JSON cannot hold (a BigInt, a cycle) is refused with unserializable-chunk, not as a database fault, and nothing of its batch is stored', async () => {
      const log = (await places.open()).stream({ runId: 'json' })
      expect(await log.append([text('a')])).toEqual(['0'])
      const cyclic = { ...text('loop') } as Record<string, unknown>
      cyclic.self = cyclic
      const big = { ...text('big'), usage: 10n } as unknown as StreamChunk
      for (const bad of [big, cyclic as unknown as StreamChunk]) {
        const error = await log.append([text('kept?'), bad]).catch((e: unknown) => e)
        expect(streamError.isInstance(error) && error.reason).toBe('unserializable-chunk')
        expect((error as Error).message).toMatch(/^Chunk 1 of the batch \(TEXT_MESSAGE_CONTENT\) cannot be stored as JSON: .*Nothing of the batch was stored\.$/)
        expect(await reasonOf(streamError, () => log.upsert([{ offset: '0', chunk: text('A') }, { offset: '1', chunk: bad }]))).toBe('unserializable-chunk')
      }
      expect(await log.append([text('b')]), 'the refused batches took no offset').toEqual(['1'])
      expect((await log.snapshot()).map((entry) => (entry.chunk as { delta?: unknown }).delta), 'and replaced nothing').toEqual(['a', 'b'])
    })

    it(`a closed log refuses append and upsert with log-closed, at any epoch and from ${target.words.peer}, and stores nothing`, async () => {
      const place = places.place()
      const [stores, other] = [await places.open({ place }), await places.open({ place })]
      const log = stores.stream({ runId: 'finished' })
      expect(await log.append([text('a')])).toEqual(['0'])
      await log.close()
      const late = other.stream({ runId: 'finished' })
      for (const write of [() => log.append([text('x')]), () => late.append([text('x')]), () => late.atEpoch(1).append([text('x')]), () => late.upsert([{ offset: '1', chunk: text('x') }]), () => late.upsert([{ offset: '0', chunk: text('A') }])]) {
        const error = await write().catch((e: unknown) => e)
        expect(streamError.isInstance(error) && error.reason).toBe('log-closed')
        expect((error as Error).message).toMatch(/run "finished" is closed/)
      }
      expect((await late.snapshot()).map((entry) => (entry.chunk as { delta?: unknown }).delta)).toEqual(['a'])
    })

    it('every call after close() throws closed', async () => {
      const stores = await places.open()
      const log = stores.stream({ runId: 'r' })
      await stores.close()
      for (const call of [() => log.append([text('a')]), () => log.snapshot(), () => log.close(), () => deltas(log, '-1')]) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(databaseError.isInstance(error) && error.reason).toBe('closed')
      }
    })

    hooks.own?.(places)
  })
}
