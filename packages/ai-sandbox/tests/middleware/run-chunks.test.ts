/**
 * The run's `sandbox.flush` tick stream: ticks coalesce to one pending, a
 * waiting reader gets a tick at once, a reader that leaves early (as
 * `mergeChunkStreams` does) does not end the stream for the run's next
 * `chatStream` call, and `close()` ends every reader and drops what is pending.
 */
import { describe, expect, it } from 'vitest'
import { createRunChunks, SANDBOX_FLUSH_EVENT } from '../../src/middleware/run-chunks.js'

const isTick = (result: IteratorResult<unknown>) => !result.done && (result.value as { type: string; name: string }).type === 'CUSTOM' && (result.value as { name: string }).name === SANDBOX_FLUSH_EVENT

describe('createRunChunks', () => {
  it('coalesces ticks that nobody read yet into one', async () => {
    const chunks = createRunChunks()
    chunks.tick()
    chunks.tick()
    chunks.tick()
    const it = chunks.stream[Symbol.asyncIterator]()
    expect(isTick(await it.next())).toBe(true)
    const second = it.next()
    chunks.close()
    expect(await second, 'only one tick was pending').toEqual({ done: true, value: undefined })
  })

  it('hands a tick to a waiting reader at once', async () => {
    const chunks = createRunChunks()
    const it = chunks.stream[Symbol.asyncIterator]()
    const read = it.next()
    chunks.tick()
    const result = await read
    expect(isTick(result)).toBe(true)
    expect(result.value).toMatchObject({ type: 'CUSTOM', name: 'sandbox.flush', value: {} })
    chunks.close()
  })

  it("keeps the stream for the run's next reader when one leaves early", async () => {
    const chunks = createRunChunks()
    const first = chunks.stream[Symbol.asyncIterator]()
    const waiting = first.next()
    await first.return!()
    expect(await waiting, 'the reader that left gets the end').toEqual({ done: true, value: undefined })
    expect(await first.next()).toEqual({ done: true, value: undefined })
    chunks.tick() // nobody reads now: kept for the next reader
    const second = chunks.stream[Symbol.asyncIterator]()
    expect(isTick(await second.next())).toBe(true)
    chunks.close()
  })

  it('ends every reader at close, drops a pending tick and ignores later ticks', async () => {
    const chunks = createRunChunks()
    chunks.tick()
    chunks.close()
    chunks.tick()
    const seen: unknown[] = []
    for await (const chunk of chunks.stream) seen.push(chunk)
    expect(seen).toEqual([])
  })
})
