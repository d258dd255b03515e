/**
 * The parts the takeover kit's cases share: the stores a store author passes
 * in (`TakeoverStores`), a run's synthetic chunks, a seeded detached run, and
 * a driver "host" (one `sandboxRunDriver` over those stores). Nothing here
 * reaches into a store. Invariant: `withHosts` releases every gate and awaits
 * every driver before it returns, so no case leaves a drive running.
 * Design notes: docs/design/testkit.md
 */
import { EventType, type RunRecord, type RunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import type { LockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { expect } from 'vitest'
import { chunkFingerprint } from '../../durability/chunk-identity.js'
import { sandboxRunDriver } from '../../durability/driver.js'
import { isEpochFencedStreamDurability, type EpochFencedStreamDurability } from '../../durability/epoch-fence.js'

/**
 * The stores under test, as a store author hands them to the kit: the run
 * records, the driver leases, and a per-run event log factory (the same shape
 * as `sandboxRunDriver`'s `durability`). `log(runId)` must resolve the same
 * log every time it is called for one run.
 */
export interface TakeoverStores<TOffset extends string = string> {
  runs: RunStore
  locks: LockStore
  log: (runId: string) => StreamDurability<TOffset>
}

/** Settings every takeover case reads. */
export interface TakeoverCheckSettings {
  /** `sandboxRunDriver`'s quiescence window, in ms. Default {@link DEFAULT_KIT_FENCE_QUIET_MS}. */
  fenceQuietMs?: number
}

/** The kit's quiescence window, in ms: short, so each case takes well under a second with in-memory stores. */
export const DEFAULT_KIT_FENCE_QUIET_MS = 200

/** How long a case waits for one condition (a chunk landing, a driver settling), in ms. */
export function waitBudgetMs(settings: TakeoverCheckSettings): number {
  return 2_000 + 4 * quietMs(settings)
}

/** The quiescence window the cases use, in ms: `settings.fenceQuietMs` or {@link DEFAULT_KIT_FENCE_QUIET_MS}. */
export function quietMs(settings: TakeoverCheckSettings): number {
  return settings.fenceQuietMs ?? DEFAULT_KIT_FENCE_QUIET_MS
}

/** The epoch a seeded run's previous driver held when it detached. */
export const SEEDED_EPOCH = 2

const RUN = randomUUID().slice(0, 8)

/** A fresh `'running'` run, detached by a previous driver that held epoch {@link SEEDED_EPOCH}. */
export async function seedDetachedRun(stores: TakeoverStores, name: string): Promise<{ runId: string; threadId: string }> {
  const runId = `takeover-conformance:${RUN}:${name}:${randomUUID()}`
  const threadId = `takeover-conformance:${RUN}:thread:${randomUUID()}`
  await stores.runs.createOrResume({ runId, threadId, startedAt: Date.now(), status: 'running' })
  await stores.runs.update(runId, { detachedSince: Date.now(), sandboxKey: `conformance:${runId}`, driverEpoch: SEEDED_EPOCH })
  const seeded = await stores.runs.get(runId)
  expect(seeded, 'seeding the run: the store must return the record createOrResume created and update patched').toMatchObject({ status: 'running', driverEpoch: SEEDED_EPOCH })
  return { runId, threadId }
}

/** How a synthetic run ends: `RUN_FINISHED`, a `RUN_FINISHED` with an interrupt outcome (a pause), or `RUN_ERROR`. */
export type RunEnding = 'finished' | 'interrupted' | 'error'

/** One run's chunks: RUN_STARTED, a text message of `words` deltas tagged with `writer`, then the ending. */
export function runChunks(ids: { runId: string; threadId: string }, writer: string, options: { words?: number; ending?: RunEnding } = {}): StreamChunk[] {
  const { runId, threadId } = ids
  const messageId = `msg-${writer}`
  const words = Array.from({ length: options.words ?? 4 }, (_, i) => `${writer}-${i} `)
  const ending = options.ending ?? 'finished'
  const last =
    ending === 'error'
      ? { type: EventType.RUN_ERROR, runId, threadId, message: `${writer} failed`, code: 'conformance-failure', timestamp: 1001 }
      : { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: 1001, ...(ending === 'interrupted' ? { outcome: { type: 'interrupt', interrupts: [] } } : {}) }
  return [
    { type: EventType.RUN_STARTED, runId, threadId, timestamp: 1 },
    { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant', timestamp: 2 },
    ...words.map((delta, i) => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta, timestamp: 10 + i })),
    { type: EventType.TEXT_MESSAGE_END, messageId, timestamp: 1000 },
    last,
  ] as StreamChunk[]
}

/** A promise and its resolver. */
export interface Gate {
  promise: Promise<void>
  open: () => void
}

/** A closed {@link Gate}. */
export function gate(): Gate {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/** Yields `chunks`; before chunk `pauseAt` (`chunks.length`: after the last one, before the stream ends) waits for `wait`. */
export async function* pausedStream(chunks: ReadonlyArray<StreamChunk>, pause?: { at: number; wait: Promise<void> }): AsyncGenerator<StreamChunk> {
  for (const [i, chunk] of chunks.entries()) {
    if (pause && i === pause.at) await pause.wait
    yield chunk
  }
  if (pause && pause.at >= chunks.length) await pause.wait
}

/** Wait until `check()` is true, polling every 5 ms; fails naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`takeover conformance: timed out after ${timeoutMs} ms waiting until ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** The chunks the log holds for `runId`, by `snapshot()`. */
export async function storedChunks(stores: TakeoverStores, runId: string): Promise<StreamChunk[]> {
  return (await stores.log(runId).snapshot()).map((entry) => entry.chunk)
}

/** Fingerprints (`chunkFingerprint`: everything but the top-level `timestamp`), for comparing what a log holds with what was driven. */
export function fingerprints(chunks: ReadonlyArray<StreamChunk>): string[] {
  return chunks.map(chunkFingerprint)
}

/** The outcome of one driver's claim. */
export type Settled = { ok: true; value: unknown } | { ok: false; error: unknown }

/** One driver over the stores under test, and what it did. */
export interface Host {
  readonly name: string
  /** Settles when the driver's claim does; never rejects. */
  readonly settled: Promise<Settled>
  /** How many times `drive` was called. */
  readonly drives: () => number
  /** The batches this driver's appends delivered to the store's log (after the fence). */
  readonly appended: StreamChunk[][]
  /** How many times this driver's `close()` reached the store's log. */
  readonly closes: () => number
  /** The patches this driver's `update` calls delivered to the run store (after the fence). */
  readonly patches: Array<Parameters<RunStore['update']>[1]>
  /** Every line the driver logged. */
  readonly lines: string[]
}

/** What a case gives {@link HostStarter} for one driver. */
export interface HostOptions {
  /** The driven stream, like core's `drive({ runId, threadId, signal })`. */
  drive: (input: { runId: string; threadId: string; signal: AbortSignal }) => AsyncIterable<StreamChunk>
  /** Replaces the run store this driver sees (a view over `stores.runs`). */
  runs?: RunStore
}

/** Starts a driver for the case's run; see {@link withHosts}. */
export type HostStarter = (name: string, options: HostOptions) => Host

/**
 * Run a case body with a driver factory. Every driver started is awaited
 * after the body, every gate in `gates` is opened first (so a paused drive
 * can finish), and a failing body's error gets each driver's log lines
 * appended, which is usually where the reason is.
 */
export async function withHosts(stores: TakeoverStores, run: { runId: string; threadId: string }, settings: TakeoverCheckSettings, gates: ReadonlyArray<Gate>, body: (start: HostStarter) => Promise<void>): Promise<void> {
  const hosts: Host[] = []
  const start: HostStarter = (name, options) => {
    const host = startHost(stores, run, settings, name, options)
    hosts.push(host)
    return host
  }
  let failure: unknown
  try {
    await body(start)
  } catch (error) {
    failure = error
  } finally {
    for (const g of gates) g.open()
    await Promise.all(hosts.map((h) => h.settled))
  }
  if (failure === undefined) return
  const logs = hosts.map((h) => `  ${h.name}: ${h.lines.length > 0 ? h.lines.join(' | ') : '(nothing logged)'}`).join('\n')
  if (failure instanceof Error) {
    failure.message = `${failure.message}\nWhat each driver logged:\n${logs}`
    throw failure
  }
  throw new Error(`${String(failure)}\nWhat each driver logged:\n${logs}`, { cause: failure })
}

function startHost(stores: TakeoverStores, ids: { runId: string; threadId: string }, settings: TakeoverCheckSettings, name: string, options: HostOptions): Host {
  const { runId, threadId } = ids
  const lines: string[] = []
  const sink = (message: string, meta?: Record<string, unknown>): void => {
    const error = meta?.error
    lines.push(error instanceof Error ? `${message}: ${error.message}` : message)
  }
  const logger = resolveDebugOption({ logger: { debug: sink, info: sink, warn: sink, error: sink } })
  const appended: StreamChunk[][] = []
  const patches: Host['patches'] = []
  let drives = 0
  let closes = 0
  const runs = recordingStore(options.runs ?? stores.runs, patches)
  const driver = sandboxRunDriver({
    request: new Request(`http://takeover-conformance.invalid/attach?runId=${encodeURIComponent(runId)}`),
    runs,
    locks: stores.locks,
    durability: (id) => observedLog(stores.log(id), appended, () => void closes++),
    drive: (input) => {
      drives += 1
      return options.drive(input)
    },
    fenceQuietMs: quietMs(settings),
    logger,
  })
  // What core's resume helper does once it decides to drive: claim, then pipe the drive inside the claim.
  const claimed = driver.claim({ runs: driver.runs, locks: driver.locks, runId }, (claim) =>
    driver.pipe(driver.drive({ runId: claim.runId, threadId, signal: claim.signal }), { runId: claim.runId, threadId, signal: claim.signal }),
  )
  const settled = Promise.resolve(claimed).then(
    (value): Settled => ({ ok: true, value }),
    (error: unknown): Settled => ({ ok: false, error }),
  )
  return { name, settled, drives: () => drives, appended, closes: () => closes, patches, lines }
}

/** `runs`, with every `update` patch that reaches it recorded. */
function recordingStore(runs: RunStore, patches: Host['patches']): RunStore {
  const view: RunStore = {
    createOrResume: (input) => runs.createOrResume(input),
    get: (runId) => runs.get(runId),
    findActiveRun: (threadId) => runs.findActiveRun(threadId),
    update: (runId, patch) => {
      patches.push(patch)
      return runs.update(runId, patch)
    },
  }
  return view
}

/**
 * A view of `runs` that, once `armed()`, reports the first stored
 * `driverEpoch` other than `heldEpoch` once and then reads `heldEpoch`
 * again: a successor's bump that one read sees and later reads do not. How
 * the latch case shows the fence stays shut even when the epoch reads right.
 */
export function epochFlickerView(runs: RunStore, heldEpoch: number): { runs: RunStore; arm: () => void; foreignReads: () => number } {
  let armed = false
  let foreign = 0
  const get = async (runId: string): Promise<RunRecord | null> => {
    const record = await runs.get(runId)
    if (!armed || record === null || record.driverEpoch === heldEpoch) return record
    foreign += 1
    return foreign === 1 ? record : { ...record, driverEpoch: heldEpoch }
  }
  const view: RunStore = {
    createOrResume: (input) => runs.createOrResume(input),
    get,
    findActiveRun: (threadId) => runs.findActiveRun(threadId),
    update: (runId, patch) => runs.update(runId, patch),
  }
  return { runs: view, arm: () => void (armed = true), foreignReads: () => foreign }
}

/** `log`, with each batch an append delivered and each `close()` recorded. Every method delegates, `atEpoch` (when the log has it) to an observed view. */
function observedLog<TOffset extends string>(log: StreamDurability<TOffset>, appended: StreamChunk[][], onClose: () => void): StreamDurability<TOffset> {
  const observed: StreamDurability<TOffset> = {
    resumeFrom: () => log.resumeFrom(),
    append: async (chunks) => {
      const offsets = await log.append(chunks)
      appended.push([...chunks])
      return offsets
    },
    read: (offset, signal) => log.read(offset, signal),
    snapshot: () => log.snapshot(),
    close: async () => {
      onClose()
      await log.close()
    },
  }
  if (!isEpochFencedStreamDurability(log)) return observed
  const fenced: EpochFencedStreamDurability<TOffset> = { ...observed, atEpoch: (epoch) => observedLog(log.atEpoch(epoch), appended, onClose) }
  return fenced
}
