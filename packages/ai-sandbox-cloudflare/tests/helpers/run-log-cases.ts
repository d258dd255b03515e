/**
 * The cases every run event log must pass, shared by the in-memory suite
 * (agent-run-log.test.ts) and the Durable Object suite in workerd
 * (durable-object-run-log.test.ts): sequencing, the exclusive cursor, readers
 * woken and ended, the signal, refusals after the end, the epoch fence, copies.
 */
import { EventType, type StreamChunk } from '@tanstack/ai'
import { StaleEpochError } from '@tanstack/ai-sandbox'
import { describe, expect, it } from 'vitest'
import { RunEventLogError, type RunEvent, type RunEventLog } from '../../src/agent/vocabulary.js'

export const text = (delta: string): StreamChunk => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta, timestamp: 1 }) as StreamChunk
const deltas = (events: readonly RunEvent[]): string[] => events.map((event) => (event.chunk as { delta: string }).delta)

async function collect(iterable: AsyncIterable<RunEvent>, count = Number.POSITIVE_INFINITY): Promise<RunEvent[]> {
  const out: RunEvent[] = []
  if (count === 0) return out
  for await (const event of iterable) {
    out.push(event)
    if (out.length >= count) break
  }
  return out
}

/**
 * Register the rules every `RunEventLog` keeps (vocabulary.ts) as a describe
 * block over `makeLog`, which is called once per case (it may return one
 * shared log: each case uses run ids of its own).
 */
export function describeRunEventLog(name: string, makeLog: () => RunEventLog | Promise<RunEventLog>): void {
  async function opened(runId = `run-${Math.random().toString(36).slice(2)}`): Promise<{ log: RunEventLog; runId: string }> {
    const log = await makeLog()
    await log.open({ runId, threadId: 'thread-1' })
    return { log, runId }
  }

describe(name, () => {
  it('numbers events 0, 1, 2, … with no gap, also for appends in flight together', async () => {
    const { log, runId } = await opened()
    expect(await log.append(runId, [text('a'), text('b')])).toEqual([0, 1])
    const batches = await Promise.all(Array.from({ length: 8 }, (_, i) => log.append(runId, [text(`c${i}`), text(`d${i}`)])))
    expect(batches.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i + 2))
    expect((await log.snapshot(runId)).map((event) => event.seq)).toEqual(Array.from({ length: 18 }, (_, i) => i))
    expect((await log.get(runId))?.lastSeq).toBe(17)
  })

  it('reads after an exclusive cursor, and a blocked reader wakes on the next append', async () => {
    const { log, runId } = await opened()
    await log.append(runId, [text('a'), text('b'), text('c')])
    const reading = collect(log.read(runId, { after: 1 }), 3)
    await new Promise((resolve) => setTimeout(resolve, 20))
    await log.append(runId, [text('d'), text('e')])
    const events = await reading
    expect(events.map((event) => event.seq)).toEqual([2, 3, 4])
    expect(deltas(events)).toEqual(['c', 'd', 'e'])
  })

  it('a reader ends after the last event once the log closes, or once the record turns terminal', async () => {
    const { log, runId } = await opened()
    await log.append(runId, [text('a')])
    const closing = collect(log.read(runId))
    await log.append(runId, [text('b')])
    await log.close(runId)
    expect(deltas(await closing)).toEqual(['a', 'b'])

    const second = await opened()
    await second.log.append(second.runId, [text('x')])
    const ending = collect(second.log.read(second.runId))
    await new Promise((resolve) => setTimeout(resolve, 20))
    await second.log.update(second.runId, { status: 'completed', finishedAt: Date.now() })
    expect(deltas(await ending)).toEqual(['x'])
  })

  it("a read ends without an error when its signal aborts", async () => {
    const { log, runId } = await opened()
    await log.append(runId, [text('a')])
    const controller = new AbortController()
    const reading = collect(log.read(runId, { signal: controller.signal }))
    await new Promise((resolve) => setTimeout(resolve, 20))
    controller.abort()
    expect(deltas(await reading)).toEqual(['a'])
  })

  it('refuses appends after the close and after a terminal status, storing nothing', async () => {
    const { log, runId } = await opened()
    await log.append(runId, [text('a')])
    await log.close(runId)
    const closed = await log.append(runId, [text('b')]).catch((error: unknown) => error)
    expect(RunEventLogError.isInstance(closed) && closed.reason).toBe('log-closed')

    const second = await opened()
    await second.log.update(second.runId, { status: 'failed', error: { message: 'boom' } })
    const ended = await second.log.append(second.runId, [text('b')]).catch((error: unknown) => error)
    expect(RunEventLogError.isInstance(ended) && ended.reason).toBe('log-closed')
    expect(await second.log.snapshot(second.runId)).toEqual([])
  })

  it('fences a claimed run: only its epoch appends, updates and closes', async () => {
    const { log, runId } = await opened()
    await log.update(runId, { driverEpoch: 2 })
    await expect(log.append(runId, [text('stale')])).rejects.toBeInstanceOf(StaleEpochError)
    await expect(log.append(runId, [text('stale')], { epoch: 1 })).rejects.toBeInstanceOf(StaleEpochError)
    expect(await log.append(runId, [text('ok')], { epoch: 2 })).toEqual([0])
    expect(await log.update(runId, { detachedSince: 5 }, { epoch: 1 })).toBeNull()
    expect(await log.close(runId, { epoch: 1 })).toBe(false)
    expect(await log.close(runId, { epoch: 2 })).toBe(true)
    expect((await log.get(runId))?.logClosed).toBe(true)
  })

  it('keeps its stored values apart from what callers pass and get', async () => {
    const { log, runId } = await opened()
    const chunk = text('a')
    await log.append(runId, [chunk])
    ;(chunk as { delta: string }).delta = 'changed'
    const [event] = await log.snapshot(runId)
    ;(event!.chunk as { delta: string }).delta = 'changed again'
    expect(deltas(await log.snapshot(runId))).toEqual(['a'])
  })

  it('refuses a chunk JSON cannot hold, storing nothing of its batch', async () => {
    const { log, runId } = await opened()
    const cyclic: Record<string, unknown> = { type: EventType.CUSTOM, name: 'x', timestamp: 1 }
    cyclic.value = cyclic
    const error = await log.append(runId, [text('a'), cyclic as unknown as StreamChunk]).catch((caught: unknown) => caught)
    expect(RunEventLogError.isInstance(error) && error.reason).toBe('unserializable-chunk')
    expect(await log.snapshot(runId)).toEqual([])
  })
})
}
