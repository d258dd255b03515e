// The run event log kit against core's memoryStream, and proof that each check fails a deliberately
// broken log (every one a memoryStream with one rule broken): reads that ignore the offset, a
// resumeFrom that ignores Last-Event-ID, a close that wakes no reader, one log for every run, a
// malformed offset read as the start, batches that interleave, a snapshot that hands out its
// storage, an upsert that writes before it validates, an empty join that never fails.
import { memoryStream, type StreamDurability, type UpsertableStreamDurability } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { SandboxConfigError, type StreamSourceInit } from '../../src/index.js'
import * as testkit from '../../src/testkit/index.js'
import { runStreamDurabilityConformance, STREAM_DURABILITY_CHECKS, type StreamDurabilityStores } from '../../src/testkit/index.js'
import { failureOf } from '../helpers/kit-failure.js'

runStreamDurabilityConformance("core's memoryStream", {
  makeStores: () => ({ stream: (source) => memoryStream(source) }),
  acceptsWritesAfterClose: "core's memoryStream (@tanstack/ai 0.58.0) appends to a closed log; the test below pins that",
})

type Source = Request | StreamSourceInit

/** Stores whose logs are memoryStream's with `change` applied to each. */
function broken(change: (log: UpsertableStreamDurability, source: Source) => Partial<UpsertableStreamDurability>): StreamDurabilityStores {
  return {
    stream: (source) => {
      const log = memoryStream(source)
      return { ...log, ...change(log, source) }
    },
  }
}

const quick = { waitMs: 300 }

describe('the stream durability kit', () => {
  it('lists each exported check once, and refuses bad options naming the field', () => {
    const exported = Object.entries(testkit).flatMap(([name, value]) => (name.startsWith('checkStream') ? [value] : []))
    expect(STREAM_DURABILITY_CHECKS).toHaveLength(exported.length)
    expect(new Set(STREAM_DURABILITY_CHECKS.map(([, check]) => check)), 'every exported checkStream… is in the table once').toEqual(new Set(exported))
    const makeStores = (): StreamDurabilityStores => ({ stream: (source) => memoryStream(source) })
    expect(() => runStreamDurabilityConformance('bad', { makeStores: makeStores() as never })).toThrow(SandboxConfigError)
    expect(() => runStreamDurabilityConformance('bad', { makeStores, waitMs: 0 })).toThrow(/runStreamDurabilityConformance\.waitMs/)
    expect(() => runStreamDurabilityConformance('bad', { makeStores, extra: 1 } as never)).toThrow(/runStreamDurabilityConformance\.extra/)
  })
})

describe('the stream durability kit catches a broken log', () => {
  it("core's memoryStream takes chunks after close(), so it fails checkStreamClosedLogRefusesWrites (a store we ship refuses)", async () => {
    const stores: StreamDurabilityStores = { stream: (source) => memoryStream(source) }
    expect(await failureOf(() => testkit.checkStreamClosedLogRefusesWrites(stores, quick))).toMatch(/append on a closed log is refused/)
  })

  it('a read that ignores its offset fails checkStreamAppendRead', async () => {
    const stores = broken((log) => ({ read: (_offset, signal) => log.read('-1', signal) }))
    expect(await failureOf(() => testkit.checkStreamAppendRead(stores, quick))).toMatch(/yields exactly the chunks after it/)
  })

  it('a resumeFrom that reads only ?offset fails checkStreamResumeFrom', async () => {
    const stores = broken((log, source) => ({ resumeFrom: () => (source instanceof Request ? new URL(source.url).searchParams.get('offset') : log.resumeFrom()) }))
    expect(await failureOf(() => testkit.checkStreamResumeFrom(stores, quick))).toMatch(/Last-Event-ID header wins/)
  })

  it('a close that wakes no reader fails checkStreamCloseEndsReaders', async () => {
    const stores = broken(() => ({ close: async () => undefined }))
    expect(await failureOf(() => testkit.checkStreamCloseEndsReaders(stores, quick))).toMatch(/every live reader ends once close\(\) resolved/)
  })

  it('one log for every run fails checkStreamRunsIsolated', async () => {
    const shared = `shared-${Date.now()}`
    const stores: StreamDurabilityStores = { stream: () => memoryStream({ runId: shared }) }
    expect(await failureOf(() => testkit.checkStreamRunsIsolated(stores, quick))).toMatch(/B's reader saw only B's chunks/)
  })

  it('a malformed offset read as the start fails checkStreamMalformedOffset', async () => {
    const stores = broken((log) => ({ read: (offset, signal) => log.read(offset.startsWith('memory:') || offset === 'now' ? offset : '-1', signal) }))
    expect(await failureOf(() => testkit.checkStreamMalformedOffset(stores, quick))).toMatch(/a malformed offset is refused/)
  })

  it('a batch stored chunk by chunk, so concurrent batches interleave, fails checkStreamConcurrentAppends', async () => {
    const stores = broken((log) => ({
      append: async (chunks) => {
        const offsets: string[] = []
        for (const chunk of chunks) {
          await new Promise((resolve) => setImmediate(resolve))
          offsets.push(...(await log.append([chunk])))
        }
        return offsets
      },
    }))
    expect(await failureOf(() => testkit.checkStreamConcurrentAppends(stores, quick))).toMatch(/is stored contiguously/)
  })

  it('a snapshot that hands out the array it keeps fails checkStreamSnapshot', async () => {
    const kept = new Map<string, Awaited<ReturnType<StreamDurability['snapshot']>>>()
    const stores = broken((log, source) => ({
      snapshot: async () => {
        const runId = source instanceof Request ? source.url : source.runId
        const stored = kept.get(runId) ?? (await log.snapshot())
        kept.set(runId, stored)
        return stored
      },
    }))
    expect(await failureOf(() => testkit.checkStreamSnapshot(stores, quick))).toMatch(/mutating a snapshot's array does not reach the stored log/)
  })

  it('an upsert that stores its valid entries before refusing a bad one fails checkStreamUpsert', async () => {
    const stores = broken((log) => ({
      upsert: async (entries) => {
        const list = Array.from(entries)
        if (list.some((entry) => entry === undefined) || new Set(list.map((entry) => entry.offset)).size !== list.length) throw new Error('a hole or a repeated offset')
        const offsets: string[] = []
        for (const entry of list) offsets.push(...(await log.upsert([entry])))
        return offsets
      },
    }))
    expect(await failureOf(() => testkit.checkStreamUpsert(stores, quick))).toMatch(/stores nothing, not even its valid entries/)
  })

  it('a from-start join that waits forever for a first chunk fails checkStreamEmptyJoinFails', async () => {
    const stores = broken((log) => ({
      read: async function* (offset, signal) {
        if ((await log.snapshot()).length === 0) await new Promise(() => undefined)
        yield* log.read(offset, signal)
      },
    }))
    expect(await failureOf(() => testkit.checkStreamEmptyJoinFails(stores, quick))).toMatch(/fails once its first-chunk deadline passes/)
  })

  it("a 'now' read that replays the whole log fails checkStreamLiveTail", async () => {
    const stores = broken((log) => ({ read: (offset, signal) => log.read(offset === 'now' ? '-1' : offset, signal) }))
    expect(await failureOf(() => testkit.checkStreamLiveTail(stores, quick))).toMatch(/only chunks appended after it started/)
  })

  it('a log that fails a read of a closed empty log fails checkStreamClosedLogEnds', async () => {
    const stores = broken((log) => ({
      read: async function* (offset, signal) {
        if ((await log.snapshot()).length === 0) throw new Error('no data')
        yield* log.read(offset, signal)
      },
    }))
    expect(await failureOf(() => testkit.checkStreamClosedLogEnds(stores, quick))).toMatch(/closed with nothing stored ends at once/)
  })
})
