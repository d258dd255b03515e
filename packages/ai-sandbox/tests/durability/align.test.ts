/**
 * alignToStoredLog against core's real `memoryStream`: chunks a first host
 * delivered are appended to the log, then a replay of the same run is
 * aligned, as a takeover does. Every row of spec 004's table: exhausted log,
 * match, out-of-band skip within and past the bound, divergence, the
 * threadId-only subclass, trailing entries, and the one snapshot read.
 */
import { randomUUID } from 'node:crypto'
import { EventType, memoryStream, type StreamChunk } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { describe, expect, it } from 'vitest'
import { isBridgeCustomChunk as bridgePredicate } from '../../src/bridge/bridge-events.js'
import { SandboxConfigError, SandboxError } from '../../src/contracts/errors.js'
import {
  alignToStoredLog,
  chunkFingerprint,
  createRunScopedIdGen,
  DEFAULT_MAX_OUT_OF_BAND_SKIP,
  isBridgeCustomChunk,
  JournalReplayDivergedError,
  JournalReplayThreadIdMismatchError,
} from '../../src/index.js'

/** A translated run as a harness produces it: ids from the run-scoped generator, a fresh timestamp on every chunk. */
function translatedRun(runId: string, threadId: string, words: number): StreamChunk[] {
  const genId = createRunScopedIdGen(runId)
  const messageId = genId()
  const toolCallId = genId()
  const now = () => Date.now() + Math.random()
  return [
    { type: EventType.RUN_STARTED, runId, threadId, timestamp: now() },
    { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant', timestamp: now() },
    ...Array.from({ length: words }, (_, i) => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: `word ${i} `, timestamp: now() })),
    { type: EventType.TEXT_MESSAGE_END, messageId, timestamp: now() },
    { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: 'Bash', timestamp: now() },
    { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: '{"command":"ls -la","cwd":"/w"}', timestamp: now() },
    { type: EventType.TOOL_CALL_END, toolCallId, timestamp: now() },
    { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: now() },
  ] as StreamChunk[]
}

function bridgeEvent(n: number): StreamChunk {
  return { type: EventType.CUSTOM, name: 'tool-bridge.call', value: { n }, timestamp: Date.now() } as StreamChunk
}

async function* from(chunks: readonly StreamChunk[]): AsyncGenerator<StreamChunk> {
  yield* chunks
}

async function collect(chunks: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const chunk of chunks) out.push(chunk)
  return out
}

/** A fresh log that already holds `stored`, as the dead host left it. */
async function storedLog(stored: readonly StreamChunk[]) {
  const durability = memoryStream({ runId: `align-${randomUUID()}` })
  if (stored.length > 0) await durability.append([...stored])
  return durability
}

async function alignError(promise: Promise<unknown>): Promise<JournalReplayDivergedError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(JournalReplayDivergedError)
  return error as JournalReplayDivergedError
}

describe('alignToStoredLog', () => {
  it('forwards every chunk when the log is empty', async () => {
    const replay = translatedRun('run-a', 'thread-a', 5)
    const out = await collect(alignToStoredLog(from(replay), { durability: await storedLog([]) }))
    expect(out).toEqual(replay)
  })

  it('suppresses the prefix the log holds and forwards only the remainder, whatever the timestamps', async () => {
    const first = translatedRun('run-b', 'thread-b', 20)
    const durability = await storedLog(first.slice(0, 9))
    const replay = translatedRun('run-b', 'thread-b', 20) // re-translated: same ids, new timestamps
    const out = await collect(alignToStoredLog(from(replay), { durability }))
    expect(out).toEqual(replay.slice(9))
    expect(out.map(chunkFingerprint)).toEqual(first.slice(9).map(chunkFingerprint))
  })

  it('forwards nothing when the replay reproduces the whole log', async () => {
    const durability = await storedLog(translatedRun('run-c', 'thread-c', 3))
    expect(await collect(alignToStoredLog(from(translatedRun('run-c', 'thread-c', 3)), { durability }))).toEqual([])
  })

  it('throws JournalReplayDivergedError with the index and both fingerprints on a different chunk', async () => {
    const durability = await storedLog(translatedRun('run-d', 'thread-d', 10))
    const replay = translatedRun('run-d', 'thread-d', 10)
    const changed = { ...replay[6]!, delta: 'another word ' } as StreamChunk
    replay[6] = changed
    const seen: StreamChunk[] = []
    const error = await alignError(
      (async () => {
        for await (const chunk of alignToStoredLog(from(replay), { durability })) seen.push(chunk)
      })(),
    )
    expect(error).not.toBeInstanceOf(JournalReplayThreadIdMismatchError)
    expect(error.reason).toBe('diverged')
    expect(error.index).toBe(6)
    expect(error.stored).toBe(chunkFingerprint((await durability.snapshot())[6]!.chunk))
    expect(error.replayed).toBe(chunkFingerprint(changed))
    expect(error.message).toContain('index 6')
    expect(error.message).toContain('runId')
    expect(SandboxError.isInstance(error)).toBe(true)
    expect(JournalReplayDivergedError.isInstance(error)).toBe(true)
    expect(seen).toEqual([]) // nothing past the mismatch, and nothing before it (all stored)
  })

  it('diverges on a nested tool-call argument and on a non-run-scoped id', async () => {
    const durability = await storedLog(translatedRun('run-e', 'thread-e', 2))
    const replay = translatedRun('run-e', 'thread-e', 2)
    const argsIndex = replay.findIndex((c) => c.type === EventType.TOOL_CALL_ARGS)
    replay[argsIndex] = { ...replay[argsIndex]!, delta: '{"command":"ls -la","cwd":"/x"}' } as StreamChunk
    expect((await alignError(collect(alignToStoredLog(from(replay), { durability })))).index).toBe(argsIndex)

    // A random message id (a genId that is not run-scoped) diverges at the first chunk that carries it.
    const random = translatedRun('run-e', 'thread-e', 2).map((c) => ('messageId' in c ? { ...c, messageId: randomUUID() } : c)) as StreamChunk[]
    expect((await alignError(collect(alignToStoredLog(from(random), { durability: await storedLog(translatedRun('run-e', 'thread-e', 2)) })))).index).toBe(1)
  })

  it('throws the threadId-only subclass when nothing but the threadId moved', async () => {
    const durability = await storedLog(translatedRun('run-f', 'thread-record', 4))
    const error = await alignError(collect(alignToStoredLog(from(translatedRun('run-f', 'thread-minted', 4)), { durability })))
    expect(error).toBeInstanceOf(JournalReplayThreadIdMismatchError)
    expect(JournalReplayThreadIdMismatchError.isInstance(error)).toBe(true)
    const mismatch = error as JournalReplayThreadIdMismatchError
    expect(mismatch.reason).toBe('thread-id-mismatch')
    expect(mismatch.index).toBe(0)
    expect(mismatch.storedThreadId).toBe('thread-record')
    expect(mismatch.replayedThreadId).toBe('thread-minted')
    expect(mismatch.message).toContain('RunRecord.threadId')
    expect(mismatch.message).toContain('chat({ threadId })')
  })

  it('throws the general class when the threadId and something else both moved', async () => {
    const durability = await storedLog(translatedRun('run-g', 'thread-1', 1))
    const error = await alignError(collect(alignToStoredLog(from(translatedRun('run-other', 'thread-2', 1)), { durability })))
    expect(error).not.toBeInstanceOf(JournalReplayThreadIdMismatchError)
    expect(error.reason).toBe('diverged')
  })

  it("uses the tool bridge's structural predicate: every CUSTOM chunk, nothing else", () => {
    expect(isBridgeCustomChunk).toBe(bridgePredicate)
    expect(isBridgeCustomChunk(bridgeEvent(1))).toBe(true)
    expect(isBridgeCustomChunk({ type: EventType.CUSTOM, name: 'a-new-bridge-event', value: null } as StreamChunk)).toBe(true)
    expect(translatedRun('r', 't', 1).some(isBridgeCustomChunk)).toBe(false)
  })

  it('skips out-of-band stored chunks only with the predicate, and only stored ones', async () => {
    const run = translatedRun('run-h', 'thread-h', 6)
    const stored = [...run.slice(0, 3), bridgeEvent(1), bridgeEvent(2), ...run.slice(3, 7), bridgeEvent(3), ...run.slice(7, 9)]
    const replay = translatedRun('run-h', 'thread-h', 6)

    expect((await alignError(collect(alignToStoredLog(from(replay), { durability: await storedLog(stored) })))).index).toBe(3)

    const out = await collect(alignToStoredLog(from(translatedRun('run-h', 'thread-h', 6)), { durability: await storedLog(stored), isOutOfBand: isBridgeCustomChunk }))
    expect(out.map(chunkFingerprint)).toEqual(run.slice(9).map(chunkFingerprint))

    // A CUSTOM chunk in the replay that the log does not hold is a divergence: the predicate is applied to stored chunks only.
    const replayWithCustom = [...translatedRun('run-h', 'thread-h', 6).slice(0, 2), bridgeEvent(9), ...translatedRun('run-h', 'thread-h', 6).slice(2)]
    const error = await alignError(collect(alignToStoredLog(from(replayWithCustom), { durability: await storedLog(run), isOutOfBand: isBridgeCustomChunk })))
    expect(error.index).toBe(2)
  })

  it(`allows ${DEFAULT_MAX_OUT_OF_BAND_SKIP} out-of-band chunks in a row and throws at ${DEFAULT_MAX_OUT_OF_BAND_SKIP + 1}`, async () => {
    expect(DEFAULT_MAX_OUT_OF_BAND_SKIP).toBe(64)
    const run = translatedRun('run-i', 'thread-i', 2)
    const burst = (n: number) => Array.from({ length: n }, (_, i) => bridgeEvent(i))
    const options = (stored: StreamChunk[]) => storedLog(stored).then((durability) => ({ durability, isOutOfBand: isBridgeCustomChunk }))

    const ok = [run[0]!, ...burst(64), ...run.slice(1, 4)]
    expect(await collect(alignToStoredLog(from(translatedRun('run-i', 'thread-i', 2)), await options(ok)))).toHaveLength(run.length - 4)

    const tooMany = [run[0]!, ...burst(65), ...run.slice(1, 4)]
    const error = await alignError(collect(alignToStoredLog(from(translatedRun('run-i', 'thread-i', 2)), await options(tooMany))))
    expect(error.index).toBe(1 + 64) // the 65th chunk of the burst
    expect(error.reason).toBe('diverged')

    // A match resets the count: two bursts of 64 around one matched chunk are fine.
    const twoBursts = [run[0]!, ...burst(64), run[1]!, ...burst(64), ...run.slice(2, 4)]
    expect(await collect(alignToStoredLog(from(translatedRun('run-i', 'thread-i', 2)), await options(twoBursts)))).toHaveLength(run.length - 4)
  })

  it('honours maxOutOfBandSkip, 0 meaning no skip at all', async () => {
    const run = translatedRun('run-j', 'thread-j', 1)
    const stored = [run[0]!, bridgeEvent(1), bridgeEvent(2), ...run.slice(1)]
    const align = async (maxOutOfBandSkip: number) => collect(alignToStoredLog(from(translatedRun('run-j', 'thread-j', 1)), { durability: await storedLog(stored), isOutOfBand: isBridgeCustomChunk, maxOutOfBandSkip }))
    expect(await align(2)).toEqual([])
    expect((await alignError(align(1))).index).toBe(2)
    expect((await alignError(align(0))).index).toBe(1)
  })

  it('accepts trailing out-of-band chunks after the replay ends, any number of them', async () => {
    const run = translatedRun('run-k', 'thread-k', 3)
    const stored = [...run, ...Array.from({ length: 100 }, (_, i) => bridgeEvent(i))]
    expect(await collect(alignToStoredLog(from(translatedRun('run-k', 'thread-k', 3)), { durability: await storedLog(stored), isOutOfBand: isBridgeCustomChunk }))).toEqual([])
  })

  it('throws replay-too-short when trailing stored chunks are not out-of-band', async () => {
    const run = translatedRun('run-l', 'thread-l', 5)
    const shortReplay = translatedRun('run-l', 'thread-l', 5).slice(0, 4)
    const error = await alignError(collect(alignToStoredLog(from(shortReplay), { durability: await storedLog(run) })))
    expect(error.reason).toBe('replay-too-short')
    expect(error.index).toBe(4)
    expect(error.stored).toBe(chunkFingerprint(run[4]!))
    expect(error.replayed).toBe('<end of replay>')
    expect(error.message).toContain(`${run.length - 4} stored chunk(s) from index 4`)

    // Out-of-band chunks before the first unreproduced one are skipped; the index names the unreproduced one.
    const withBridge = [...run.slice(0, 4), bridgeEvent(1), ...run.slice(4)]
    const second = await alignError(collect(alignToStoredLog(from(translatedRun('run-l', 'thread-l', 5).slice(0, 4)), { durability: await storedLog(withBridge), isOutOfBand: isBridgeCustomChunk })))
    expect(second.reason).toBe('replay-too-short')
    expect(second.index).toBe(5)
  })

  it('reads the log exactly once, before pulling the replay, and never mistakes chunks appended meanwhile for stored ones', async () => {
    const run = translatedRun('run-m', 'thread-m', 10)
    const log = await storedLog(run.slice(0, 5))
    const events: string[] = []
    const durability = {
      snapshot: async () => {
        events.push('snapshot')
        return log.snapshot()
      },
    }
    async function* replay(): AsyncGenerator<StreamChunk> {
      events.push('replay pulled')
      yield* translatedRun('run-m', 'thread-m', 10)
    }
    const forwarded: StreamChunk[] = []
    for await (const chunk of alignToStoredLog(replay(), { durability })) {
      await log.append([chunk]) // what the caller does downstream: append the remainder
      forwarded.push(chunk)
    }
    expect(events).toEqual(['snapshot', 'replay pulled'])
    expect(forwarded.map(chunkFingerprint)).toEqual(run.slice(5).map(chunkFingerprint))
    expect((await log.snapshot()).map((e) => chunkFingerprint(e.chunk))).toEqual(run.map(chunkFingerprint))
  })

  it('stops the replay source when it throws', async () => {
    let returned = false
    async function* replay(): AsyncGenerator<StreamChunk> {
      try {
        yield* translatedRun('run-n', 'thread-n', 50)
      } finally {
        returned = true
      }
    }
    await alignError(collect(alignToStoredLog(replay(), { durability: await storedLog(translatedRun('run-n', 'thread-x', 50)) })))
    expect(returned).toBe(true)
  })

  it("logs one summary line on chat()'s provider category", async () => {
    const lines: Array<{ message: string; meta?: Record<string, unknown> }> = []
    const sink = (message: string, meta?: Record<string, unknown>) => void lines.push({ message, meta })
    const logger = resolveDebugOption({ logger: { debug: sink, info: sink, warn: sink, error: sink }, provider: true })
    const run = translatedRun('run-o', 'thread-o', 3)
    const stored = [...run.slice(0, 2), bridgeEvent(1), ...run.slice(2, 4)]
    await collect(alignToStoredLog(from(translatedRun('run-o', 'thread-o', 3)), { durability: await storedLog(stored), isOutOfBand: isBridgeCustomChunk, logger }))
    const summary = lines.filter((l) => l.message.includes('journal alignment'))
    expect(summary).toHaveLength(1)
    expect(summary[0]!.meta).toEqual({ suppressed: 4, skipped: 1, forwarded: run.length - 4 })

    const quiet = resolveDebugOption({ logger: { debug: sink, info: sink, warn: sink, error: sink }, provider: false })
    lines.length = 0
    await collect(alignToStoredLog(from(run), { durability: await storedLog([]), logger: quiet }))
    expect(lines).toEqual([])
  })

  it('refuses bad options with a SandboxConfigError naming the field, when called', () => {
    const durability = memoryStream({ runId: `align-${randomUUID()}` })
    const call = (options: unknown) => () => alignToStoredLog(from([]), options as never)
    expect(call({})).toThrow(SandboxConfigError)
    expect(call({})).toThrow(/alignToStoredLog\.durability/)
    expect(call({ durability, maxOutOfBandSkip: -1 })).toThrow(/alignToStoredLog\.maxOutOfBandSkip/)
    expect(call({ durability, maxOutOfBandSkip: 1.5 })).toThrow(/whole number/)
    expect(call({ durability, isOutOfBand: true })).toThrow(/alignToStoredLog\.isOutOfBand/)
    expect(call({ durability, maxOutOfBandSkp: 3 })).toThrow(/alignToStoredLog\.maxOutOfBandSkp/)
  })
})
