/**
 * `runStreamDurabilityConformance`: the run event log (`StreamDurability`) as a
 * vitest suite over a store author's log factory, checking only what core
 * relies on. Every read is bounded by `waitMs`. Each check is also a plain
 * function. Source: `@tanstack/ai` 0.58.0 `stream-durability.d.ts`. One file:
 * the checks share one factory and read in order. Design notes: docs/design/testkit.md
 */
import { EventType, resumeServerSentEventsResponse, toServerSentEventsResponse, type StreamChunk, type StreamDurability, type UpsertableStreamDurability } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import type { StreamSourceInit } from '../durability/stream-source.js'
import { parseSse } from './sse.js'
import { labels, readAll, refusal, runId, tail, text, untilRead, within } from './stream-durability/reads.js'

/** What {@link runStreamDurabilityConformance} checks: the logs of one store. */
export interface StreamDurabilityStores {
  /** The log of the run `source` names (a Request: `X-Run-Id` / `?runId`, resume offset from `Last-Event-ID` / `?offset`). Every call for one run must reach the same stored log. */
  stream: (source: Request | StreamSourceInit) => StreamDurability
  /** A second way to the same logs (another connection or pool); the checks read through it and write through `stream`. Default `stream`. */
  reader?: (source: Request | StreamSourceInit) => StreamDurability
  /** Called after each case. */
  close?: () => void | Promise<void>
}

/** How long a check waits before it fails. */
export interface StreamDurabilityCheckSettings {
  /** ms a check waits for a reader to see a chunk, end or fail, and for any call to settle. Default 10 000. */
  waitMs?: number
}

/** One check of the kit. */
export type StreamDurabilityCheck = (stores: StreamDurabilityStores, settings?: StreamDurabilityCheckSettings) => Promise<void>

/** Options of {@link runStreamDurabilityConformance}. */
export interface StreamDurabilityConformanceOptions extends StreamDurabilityCheckSettings {
  /** Build the stores under test; called before each case. */
  makeStores: () => StreamDurabilityStores | Promise<StreamDurabilityStores>
  /** Timeout of each case, in ms. Default 20 000. */
  timeoutMs?: number
  /**
   * Set, with the reason, only for a log known to take chunks after `close()` (core's `memoryStream` in
   * `@tanstack/ai` 0.58.0 does): {@link checkStreamClosedLogRefusesWrites} is then skipped naming the reason. A store
   * that serves more than one client should refuse instead.
   */
  acceptsWritesAfterClose?: string
}

const DEFAULT_WAIT_MS = 10_000

function waitOf(settings: StreamDurabilityCheckSettings | undefined): number {
  return settings?.waitMs ?? DEFAULT_WAIT_MS
}

function reader(stores: StreamDurabilityStores): (source: Request | StreamSourceInit) => StreamDurability {
  return stores.reader ?? stores.stream
}

/** `append` returns one offset per chunk (none for an empty batch), unique and usable as an SSE id; `read(offset)` yields exactly the chunks after it, in order, with those offsets. */
export const checkStreamAppendRead: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('append-read')
  const log = stores.stream({ runId: id })
  const chunks = ['a', 'b "quoted"', 'c\nsecond line', 'd ä 🔑', 'e'].map(text)
  const offsets = [...(await log.append(chunks.slice(0, 2))), ...(await log.append([])), ...(await log.append(chunks.slice(2, 3))), ...(await log.append(chunks.slice(3)))]
  expect(offsets, 'append returns exactly one offset per chunk, and none for an empty batch').toHaveLength(chunks.length)
  expect(new Set(offsets).size, `the offsets are unique: ${JSON.stringify(offsets)}`).toBe(offsets.length)
  for (const offset of offsets) {
    expect(typeof offset === 'string' && offset.length > 0 && !/[\r\n\0]/.test(offset), `offset ${JSON.stringify(offset)} is a non-empty string without CR, LF or NUL (it is sent as an SSE id)`).toBe(true)
    expect(['-1', 'now'], `offset ${JSON.stringify(offset)} is not one of the reserved '-1' and 'now'`).not.toContain(offset)
  }
  await log.close()
  const all = await readAll(reader(stores)({ runId: id }), '-1', ms, "read('-1') of a closed log ends")
  expect(all.map((entry) => entry.offset), "read('-1') yields every chunk with the offset append returned, in append order").toEqual(offsets)
  expect(all.map((entry) => entry.chunk), 'every chunk round-trips unchanged').toEqual(chunks)
  for (const [index, offset] of offsets.entries()) {
    const after = await readAll(reader(stores)({ runId: id }), offset, ms, `read(${JSON.stringify(offset)}) of a closed log ends`)
    expect(after.map((entry) => entry.offset), `read(offset of chunk ${index}) yields exactly the chunks after it`).toEqual(offsets.slice(index + 1))
    expect(after.map((entry) => entry.chunk)).toEqual(chunks.slice(index + 1))
  }
}

/** `resumeFrom()` is the Request's `Last-Event-ID`, then `?offset`, else `null`, or the init's `offset`; the run is `X-Run-Id`, then `?runId`. */
export const checkStreamResumeFrom: StreamDurabilityCheck = async (stores) => {
  const id = runId('resume-from')
  const offsets = await stores.stream({ runId: id }).append(['a', 'b', 'c'].map(text))
  const url = `https://kit.test/run?runId=${encodeURIComponent(id)}`
  const both = new Request(`${url}&offset=${encodeURIComponent(offsets[0]!)}`, { headers: { 'Last-Event-ID': offsets[1]! } })
  expect(reader(stores)(both).resumeFrom(), 'the Last-Event-ID header wins over ?offset').toBe(offsets[1])
  expect(reader(stores)(new Request(`${url}&offset=${encodeURIComponent(offsets[0]!)}`)).resumeFrom(), 'without the header, ?offset').toBe(offsets[0])
  expect(reader(stores)(new Request(`${url}&offset=-1`)).resumeFrom(), "?offset=-1 (from the start) is given back as '-1'").toBe('-1')
  expect(stores.stream(new Request(url, { method: 'POST' })).resumeFrom(), 'a Request with neither is a producer: null').toBeNull()
  expect(reader(stores)({ runId: id, offset: offsets[2]! }).resumeFrom(), "an init's offset").toBe(offsets[2])
  expect(stores.stream({ runId: id }).resumeFrom(), 'an init without offset: null').toBeNull()

  const [header, query] = [runId('x-run-id'), runId('query-run-id')]
  await stores.stream(new Request(`https://kit.test/run?runId=${encodeURIComponent(query)}`, { method: 'POST', headers: { 'X-Run-Id': header } })).append([text('to the header run')])
  expect(labels(await stores.stream({ runId: header }).snapshot()), 'X-Run-Id names the run, over ?runId').toEqual(['to the header run'])
  expect(await stores.stream({ runId: query }).snapshot(), 'nothing reached the ?runId run').toEqual([])
}

/** Over core's SSE helpers: the event ids are the log's offsets, `Last-Event-ID` resumes strictly after one, and `?offset=-1` replays the whole run. */
export const checkStreamSseResume: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('sse')
  const url = `https://kit.test/run?runId=${encodeURIComponent(id)}`
  const chunks: StreamChunk[] = [
    { type: EventType.RUN_STARTED, runId: id, threadId: 't', timestamp: 1 } as StreamChunk,
    text('hello '),
    text('world'),
    { type: EventType.RUN_FINISHED, runId: id, threadId: 't', finishReason: 'stop', timestamp: 2 } as StreamChunk,
  ]
  async function* produce(): AsyncGenerator<StreamChunk> {
    yield* chunks
  }
  const sseIds = (body: string): string[] => parseSse(body).flatMap((message) => (message.id === undefined ? [] : [message.id]))
  const produced = await within(toServerSentEventsResponse(produce(), { durability: { adapter: stores.stream(new Request(url, { method: 'POST' })) } }).text(), ms, 'the producing response ends')
  const stored = (await stores.stream({ runId: id }).snapshot()).map((entry) => entry.offset)
  expect(sseIds(produced), 'every event of the produced response carries the offset its chunk was stored at as its id').toEqual(stored)
  expect(stored.length, 'the run.accepted marker and the four chunks were stored').toBe(chunks.length + 1)
  const whole = await within(resumeServerSentEventsResponse({ adapter: reader(stores)(new Request(`${url}&offset=-1`)) }).text(), ms, 'a replay with ?offset=-1 ends')
  expect(whole, 'a replay with ?offset=-1 is the produced response again').toBe(produced)
  const rest = await within(resumeServerSentEventsResponse({ adapter: reader(stores)(new Request(url, { headers: { 'Last-Event-ID': stored[2]! } })) }).text(), ms, 'a replay with Last-Event-ID ends')
  expect(sseIds(rest), 'Last-Event-ID resumes strictly after that event').toEqual(stored.slice(3))
}

/** A reader tailing an open log receives each chunk appended after it started, before the log closes; a `'now'` reader only those. */
export const checkStreamLiveTail: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('live-tail')
  const writer = stores.stream({ runId: id })
  const offsets = await writer.append([text('first')])
  const live = tail(reader(stores)({ runId: id }), '-1')
  await untilRead(live, 1, ms, "a read('-1') of an open log yields what it holds")
  for (const [index, label] of ['x', 'y', 'z'].entries()) {
    offsets.push(...(await writer.append([text(label)])))
    await untilRead(live, index + 2, ms, `the live reader receives chunk ${JSON.stringify(label)} appended after it started, while the log is open`)
  }
  const now = tail(reader(stores)({ runId: id }), 'now')
  // When a 'now' reader has taken its position is not observable, so append until it receives something.
  const deadline = Date.now() + ms
  for (let i = 0; now.entries.length === 0; i++) {
    if (now.settled) await untilRead(now, 1, 0, "a read('now') of an open log receives the chunks appended after it started")
    if (Date.now() > deadline) throw new Error(`Contract violated: a read('now') of an open log receives the chunks appended after it started (nothing within ${ms} ms)`)
    offsets.push(...(await writer.append([text(`new-${i}`)])))
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  await writer.close()
  const [all, fromNow] = await within(Promise.all([live.done, now.done]), ms, 'both live readers end once the log is closed')
  expect(all.map((entry) => entry.offset), "the live read('-1') got every chunk once, in order").toEqual(offsets)
  expect(labels(fromNow).every((label) => label.startsWith('new-')), `a read('now') yields only chunks appended after it started, got ${JSON.stringify(labels(fromNow))}`).toBe(true)
  expect(fromNow.map((entry) => entry.offset), "a read('now') yields a gap-free run of the newest chunks").toEqual(offsets.slice(offsets.length - fromNow.length))
}

/** `close()` ends every live reader (`'-1'` and `'now'`) after what was stored; a second `close()` resolves; aborting the signal ends a reader without an error. */
export const checkStreamCloseEndsReaders: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('close')
  const writer = stores.stream({ runId: id })
  await writer.append([text('a'), text('b')])
  const readers = [tail(reader(stores)({ runId: id }), '-1'), tail(stores.stream({ runId: id }), '-1')]
  const now = tail(reader(stores)({ runId: id }), 'now')
  for (const [index, read] of readers.entries()) await untilRead(read, 2, ms, `live reader ${index + 1} receives what the log holds`)
  await writer.close()
  const ended = await within(Promise.all([...readers, now].map((r) => r.done)), ms, 'every live reader ends once close() resolved')
  expect(ended.map(labels), "each reader got what was stored before close, the 'now' reader nothing").toEqual([['a', 'b'], ['a', 'b'], []])
  await within(writer.close(), ms, 'a second close() resolves')

  const abortedId = runId('abort')
  await stores.stream({ runId: abortedId }).append([text('a')])
  const controller = new AbortController()
  const aborted = tail(reader(stores)({ runId: abortedId }), '-1', controller.signal)
  await untilRead(aborted, 1, ms, 'the reader to abort receives the stored chunk')
  controller.abort()
  expect(labels(await within(aborted.done, ms, 'aborting the signal ends a live reader without an error')), 'an aborted reader keeps what it got').toEqual(['a'])
}

/** A closed log is read to its end and the read ends: from the start, after an offset, from its last offset, with `'now'`, and a log closed before any append yields nothing. */
export const checkStreamClosedLogEnds: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('closed')
  const writer = stores.stream({ runId: id })
  const offsets = await writer.append([text('a'), text('b')])
  await writer.close()
  const log = reader(stores)({ runId: id })
  expect(labels(await readAll(log, '-1', ms, "read('-1') of a closed log ends"))).toEqual(['a', 'b'])
  expect(labels(await readAll(log, offsets[0]!, ms, 'read(first offset) of a closed log ends'))).toEqual(['b'])
  expect(await readAll(log, offsets[1]!, ms, 'read(last offset) of a closed log ends'), 'nothing after the last offset').toEqual([])
  expect(await readAll(log, 'now', ms, "read('now') of a closed log ends"), "nothing for 'now'").toEqual([])

  const emptyId = runId('closed-empty')
  await stores.stream({ runId: emptyId }).close()
  expect(await readAll(reader(stores)({ runId: emptyId }), '-1', ms, "read('-1') of a log closed with nothing stored ends at once, without an error"), 'a log closed empty yields nothing').toEqual([])
}

/**
 * A closed log takes no more chunks: `append` and `upsert` (where the log has it) reject and store nothing, so a
 * finished run's transcript is final for its reload, a second tab and the reaper. A request that names another
 * run, or a late writer, cannot add to it (issue: a header wrote into another run's finished log).
 */
export const checkStreamClosedLogRefusesWrites: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('closed-refuses')
  const writer = stores.stream({ runId: id })
  const [offset] = await writer.append([text('a')])
  await writer.close()
  const late = stores.stream({ runId: id })
  await refusal(late.append([text('late')]), ms, 'append on a closed log is refused')
  await refusal(writer.append([text('late')]), ms, 'append on a closed log is refused, also through the log that closed it')
  const upsert = (late as Partial<UpsertableStreamDurability>).upsert
  if (typeof upsert === 'function') {
    await refusal(upsert.call(late, [{ chunk: text('A'), offset: offset! }]), ms, 'upsert at a stored offset of a closed log is refused')
  }
  expect(labels(await reader(stores)({ runId: id }).snapshot()), 'a closed log keeps exactly what it held').toEqual(['a'])
  expect(labels(await readAll(reader(stores)({ runId: id }), '-1', ms, "read('-1') of the closed log ends")), 'readers get only what was stored before close').toEqual(['a'])
}

/** Runs are isolated: each reads only its own chunks, closing one does not end another's reader, and a resume of a run with nothing stored fails instead of waiting. */
export const checkStreamRunsIsolated: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const [idA, idB] = [runId('isolated-a'), runId('isolated-b')]
  const [a, b] = [stores.stream({ runId: idA }), stores.stream({ runId: idB })]
  const [offsetA] = await a.append([text('a1')])
  await b.append([text('b1')])
  await a.append([text('a2')])
  await b.append([text('b2')])
  const tailB = tail(reader(stores)({ runId: idB }), '-1')
  await untilRead(tailB, 2, ms, "run B's reader receives B's chunks")
  await a.close()
  await b.append([text('b3')])
  await untilRead(tailB, 3, ms, "run B's reader still receives after run A closed")
  await b.close()
  expect(labels(await within(tailB.done, ms, "run B's reader ends when B closes")), "B's reader saw only B's chunks").toEqual(['b1', 'b2', 'b3'])
  expect(labels(await a.snapshot()), "A holds only A's chunks").toEqual(['a1', 'a2'])
  const unknown = reader(stores)({ runId: runId('isolated-unknown') })
  expect(await unknown.snapshot(), 'a run nothing was appended to holds nothing').toEqual([])
  await refusal(tail(unknown, offsetA!).done, ms, 'a resume after an offset on a run with nothing stored fails (a tail of a run that is gone would wait forever)')
}

/** A malformed offset is refused: `read` rejects without yielding, even on an open log, with an `Error` whose message names the offset. */
export const checkStreamMalformedOffset: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('malformed')
  await stores.stream({ runId: id }).append([text('a'), text('b')])
  for (const bad of ['garbage', '-2', '1.5', ' 0', '99999999999999999999999', 'x\ny', '']) {
    const read = tail(reader(stores)({ runId: id }), bad)
    const error = await refusal(read.done, ms, `read(${JSON.stringify(bad)}) of an open log rejects (a malformed offset is refused, not read from the start or tailed)`)
    expect(read.entries, `read(${JSON.stringify(bad)}) yields nothing before it rejects`).toEqual([])
    expect(error, `read(${JSON.stringify(bad)}) rejects with an Error, got ${String(error)}`).toBeInstanceOf(Error)
    const message = (error as Error).message
    if (bad !== '') expect(message.includes(bad) || message.includes(JSON.stringify(bad)), `the refusal names the offset ${JSON.stringify(bad)}: ${JSON.stringify(message)}`).toBe(true)
  }
}

/** Writers appending to one run at once (each through its own `stream()` call) lose and duplicate nothing, and a live reader gets every chunk once. */
export const checkStreamConcurrentAppends: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('concurrent')
  const writers = [0, 1, 2, 3].map(() => stores.stream({ runId: id }))
  await writers[0]!.append([text('seed')])
  const live = tail(reader(stores)({ runId: id }), '-1')
  const results = await within(
    Promise.all(
      writers.map(async (log, w) => {
        const stored: Array<[label: string, offset: string]> = []
        for (let i = 0; i < 20; i++) {
          const batch = i % 5 === 0 ? [`${w}:${i}`, `${w}:${i}b`] : [`${w}:${i}`]
          const offsets = await log.append(batch.map(text))
          expect(offsets, `writer ${w}: one offset per chunk`).toHaveLength(batch.length)
          batch.forEach((label, k) => stored.push([label, offsets[k]!]))
        }
        return stored
      }),
    ),
    ms,
    'four writers finish appending 100 chunks',
  )
  await writers[1]!.close()
  const all = await readAll(reader(stores)({ runId: id }), '-1', ms, "read('-1') after the concurrent appends ends")
  const expected = new Map(results.flat())
  expect(all.length, 'the log holds exactly the seed and every chunk whose append resolved').toBe(expected.size + 1)
  expect(new Set(all.map((entry) => entry.offset)).size, 'no offset was handed out twice').toBe(all.length)
  for (const entry of all.slice(1)) {
    const label = labels([entry])[0]!
    expect(entry.offset, `chunk ${label} is stored once, at the offset its append returned`).toBe(expected.get(label))
  }
  const order = labels(all)
  for (const w of [0, 1, 2, 3]) {
    const mine = order.filter((label) => label.startsWith(`${w}:`))
    expect(mine, `writer ${w}'s chunks are in its append order`).toEqual(results[w]!.map(([label]) => label))
    for (let i = 0; i < 20; i += 5) expect(order.indexOf(`${w}:${i}b`), `writer ${w}'s batch ${i} is stored contiguously`).toBe(order.indexOf(`${w}:${i}`) + 1)
  }
  expect((await within(live.done, ms, 'the live reader ends after the close')).map((entry) => entry.offset), 'the live reader got every chunk once, in log order').toEqual(all.map((entry) => entry.offset))
}

/** `snapshot()` resolves with what is stored now without waiting (also while the log is open), `[]` for a run with nothing stored, as a fresh array. */
export const checkStreamSnapshot: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  expect(await within(stores.stream({ runId: runId('snapshot-unknown') }).snapshot(), ms, 'snapshot() of a run with nothing stored resolves'), 'it is [] (not a failure)').toEqual([])
  const id = runId('snapshot')
  const log = stores.stream({ runId: id })
  const offsets = await log.append([text('a'), text('b')])
  const first = await within(reader(stores)({ runId: id }).snapshot(), ms, 'snapshot() of an open log resolves without waiting for more')
  expect(first.map((entry) => entry.offset), 'the stored entries with their offsets, in order').toEqual(offsets)
  expect(labels(first)).toEqual(['a', 'b'])
  first.pop()
  first[0] = { offset: 'changed', chunk: text('changed') }
  const again = await within(log.snapshot(), ms, 'a second snapshot() resolves')
  expect(labels(again), "mutating a snapshot's array does not reach the stored log").toEqual(['a', 'b'])
  offsets.push(...(await log.append([text('c')])))
  expect((await within(log.snapshot(), ms, 'snapshot() after an append resolves')).map((entry) => entry.offset), 'a later snapshot includes a later append').toEqual(offsets)
  await log.close()
}

/** A from-start join of a run that never produces fails instead of waiting forever (core's first-chunk deadline), and core's SSE replay ends with a `RUN_ERROR`. */
export const checkStreamEmptyJoinFails: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('empty-join')
  const read = tail(reader(stores)({ runId: id }), '-1')
  await refusal(read.done, ms, "read('-1') of a run that stores nothing fails once its first-chunk deadline passes")
  const emptyId = runId('empty-join-sse')
  const body = await within(resumeServerSentEventsResponse({ adapter: reader(stores)(new Request(`https://kit.test/run?runId=${encodeURIComponent(emptyId)}&offset=-1`)) }).text(), ms, 'the SSE replay of a run that stores nothing ends')
  const events = parseSse(body).map((message) => (JSON.parse(message.data) as { type?: string }).type)
  expect(events, 'the replay of a run that stores nothing is one RUN_ERROR event').toEqual([EventType.RUN_ERROR])
}

/** Where the log has `upsert`: it replaces chunks at stored offsets and returns them in order; a repeated offset, a hole or a malformed offset refuses the whole batch, storing nothing. */
export const checkStreamUpsert: StreamDurabilityCheck = async (stores, settings) => {
  const ms = waitOf(settings)
  const id = runId('upsert')
  const log = stores.stream({ runId: id }) as Partial<UpsertableStreamDurability> & StreamDurability
  if (typeof log.upsert !== 'function') throw new Error('Contract violated: this log has no upsert (UpsertableStreamDurability); the check needs one')
  const upsert = log.upsert.bind(log)
  const [o0, o1, o2] = (await log.append([text('a'), text('b'), text('c')])) as [string, string, string]
  expect(await within(upsert([{ offset: o1, chunk: text('B') }, { offset: o2, chunk: text('C') }]), ms, 'upsert at stored offsets resolves'), 'upsert returns the offsets in the order supplied').toEqual([o1, o2])
  const stored = await log.snapshot()
  expect(labels(stored), 'upsert replaced the chunks at those offsets').toEqual(['a', 'B', 'C'])
  expect(stored.map((entry) => entry.offset), 'and kept the offsets').toEqual([o0, o1, o2])
  const bad: ReadonlyArray<readonly [string, Array<{ offset: string; chunk: StreamChunk }>]> = [
    ['an offset repeated within the batch', [{ offset: o0, chunk: text('z') }, { offset: o0, chunk: text('z') }]],
    // eslint-disable-next-line no-sparse-arrays
    ['a hole in the entries', [{ offset: o0, chunk: text('z') }, , { offset: o1, chunk: text('z') }] as Array<{ offset: string; chunk: StreamChunk }>],
    ['a malformed offset', [{ offset: o0, chunk: text('z') }, { offset: 'garbage', chunk: text('z') }]],
  ]
  for (const [what, entries] of bad) {
    await refusal(upsert(entries), ms, `upsert with ${what} is refused`)
    expect(labels(await log.snapshot()), `a refused upsert (${what}) stores nothing, not even its valid entries`).toEqual(['a', 'B', 'C'])
  }
  const [o3] = await log.append([text('d')])
  expect([o0, o1, o2], 'an append after upserts gets a new offset').not.toContain(o3)
  await log.close()
  expect(labels(await readAll(reader(stores)({ runId: id }), '-1', ms, 'the read after upserts ends'))).toEqual(['a', 'B', 'C', 'd'])
}

/** One entry of {@link STREAM_DURABILITY_CHECKS}: a title, the check, and the optional method it needs. */
export type StreamDurabilityCheckEntry = readonly [title: string, check: StreamDurabilityCheck, needs?: 'upsert']

/** Every check of the kit, by title. A check with a third element runs only where the log has that optional method. */
export const STREAM_DURABILITY_CHECKS: ReadonlyArray<StreamDurabilityCheckEntry> = [
  ['append returns one unique, SSE-safe offset per chunk; read yields exactly the chunks after an offset, in order', checkStreamAppendRead],
  ['resumeFrom is Last-Event-ID, then ?offset, else null; the run is X-Run-Id, then ?runId', checkStreamResumeFrom],
  ["over core's SSE helpers: ids are offsets, Last-Event-ID resumes after one, ?offset=-1 replays the run", checkStreamSseResume],
  ["a live tail receives chunks appended after it started; 'now' only those", checkStreamLiveTail],
  ['close() ends every live reader; aborting ends one without an error', checkStreamCloseEndsReaders],
  ['reading a closed log ends, also a log closed empty', checkStreamClosedLogEnds],
  ['a closed log refuses append and upsert and keeps what it held', checkStreamClosedLogRefusesWrites],
  ['runs are isolated from each other', checkStreamRunsIsolated],
  ['a malformed offset is refused, naming it', checkStreamMalformedOffset],
  ['concurrent appenders neither lose nor duplicate chunks', checkStreamConcurrentAppends],
  ['snapshot() never waits, is [] for an unknown run, and is a fresh array', checkStreamSnapshot],
  ['a from-start join of a run that never produces fails instead of waiting', checkStreamEmptyJoinFails],
  ['upsert replaces at stored offsets and refuses a bad batch whole', checkStreamUpsert, 'upsert'],
]

const optionsSchema = z
  .object({
    makeStores: z.custom<StreamDurabilityConformanceOptions['makeStores']>((v) => typeof v === 'function', { message: 'expected makeStores() returning { stream(source), reader?(source), close? }' }),
    timeoutMs: z.number().int().positive('expected a timeout in ms above 0').optional(),
    waitMs: z.number().int().positive('expected a wait in ms above 0').optional(),
    acceptsWritesAfterClose: z.string().min(1, 'expected the reason the log takes chunks after close()').optional(),
  })
  .strict()

/**
 * Register the run event log kit as a vitest `describe` block: run it in the
 * test suite of a store that implements `StreamDurability` (`@tanstack/ai`).
 * Run ids are unique per case, so a shared database is fine; the logs the
 * checks write stay behind (`StreamDurability` has no delete).
 *
 * @param name - Shown in the block title.
 * @param options - `makeStores` (required), `timeoutMs` per case (default 20 000), `waitMs` per wait inside a case (default 10 000), `acceptsWritesAfterClose` (a reason; skips the one check that a closed log refuses writes).
 * @throws SandboxConfigError naming the option when one is invalid.
 * @example
 * ```ts
 * runStreamDurabilityConformance('sqlite', { makeStores: () => { const s = createSqliteStores({ path }); return { stream: (source) => s.stream(source), close: s.close } } })
 * ```
 */
export function runStreamDurabilityConformance(name: string, options: StreamDurabilityConformanceOptions): void {
  const parsed = parseOptions(optionsSchema, options, 'runStreamDurabilityConformance')
  const timeoutMs = parsed.timeoutMs ?? 20_000
  const settings = { waitMs: parsed.waitMs ?? DEFAULT_WAIT_MS }
  describe(`stream durability conformance: ${name}`, () => {
    for (const [title, check, needs] of STREAM_DURABILITY_CHECKS) {
      it(
        title,
        async (context) => {
          const stores = await options.makeStores()
          try {
            if (needs && typeof (stores.stream({ runId: runId('probe') }) as Partial<UpsertableStreamDurability>)[needs] !== 'function') context.skip(`the log has no ${needs} (optional: UpsertableStreamDurability)`)
            if (check === checkStreamClosedLogRefusesWrites && parsed.acceptsWritesAfterClose) context.skip(`declared to take chunks after close(): ${parsed.acceptsWritesAfterClose}`)
            await check(stores, settings)
          } finally {
            await stores.close?.()
          }
        },
        timeoutMs,
      )
    }
  })
}
