/**
 * The parts the stream durability kit's checks share: unique run ids, labelled
 * chunks, and reads and waits bounded in time, so a reader that never ends or
 * a call that never settles fails naming what the check waited for instead of
 * hanging the suite. Nothing here knows a store: only `StreamDurability`.
 */
import { EventType, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { randomUUID } from 'node:crypto'

/** An entry a read yields. */
export type Entry = { offset: string; chunk: StreamChunk }

const RUN = randomUUID().slice(0, 8)

/** A run id unique to this run of the kit and this call. */
export function runId(name: string): string {
  return `stream-kit:${RUN}:${name}:${randomUUID()}`
}

/** A text chunk whose delta is `label` (a check's labels carry quotes, a newline and non-ASCII where it proves the round trip). */
export function text(label: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta: label, timestamp: 1_700_000_000_123 } as StreamChunk
}

/** The label of each entry's chunk. */
export function labels(entries: ReadonlyArray<{ chunk: StreamChunk }>): string[] {
  return entries.map((entry) => (entry.chunk as { delta?: string }).delta ?? '?')
}

/** `promise`, or a rejection naming `what` once `ms` pass. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Contract violated: ${what} (still pending after ${ms} ms)`)), ms)
  })
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

/** Resolves once `check()` is true (looked at every 5 ms), failing naming `what` after `ms`. */
export async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`Contract violated: ${what} (not seen within ${ms} ms)`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A read in progress: what it yielded so far, and how it ended once it has. */
export interface Tail {
  /** The entries yielded so far. */
  entries: Entry[]
  /** Settles when the read ends: its entries, or its error. */
  done: Promise<Entry[]>
  /** True once the read ended (returned or threw). */
  settled: boolean
  /** What the read threw, once it did. */
  error: unknown
}

/** A read of `log` from `offset`, collecting its entries as they come. */
export function tail(log: StreamDurability, offset: string, signal?: AbortSignal): Tail {
  const read: Tail = { entries: [], done: Promise.resolve([]), settled: false, error: undefined }
  read.done = (async () => {
    for await (const entry of log.read(offset, signal)) read.entries.push(entry)
    return read.entries
  })()
  read.done.then(
    () => {
      read.settled = true
    },
    (error: unknown) => {
      read.settled = true
      read.error = error
    },
  )
  return read
}

/** Resolves once `read` has yielded `count` entries, failing naming `what` when it ends first or `ms` pass. */
export async function untilRead(read: Tail, count: number, ms: number, what: string): Promise<void> {
  await until(() => read.entries.length >= count || read.settled, ms, what)
  if (read.entries.length >= count) return
  throw new Error(`Contract violated: ${what} (the read ${read.error === undefined ? 'ended' : `failed: ${messageOf(read.error)}`} after ${read.entries.length} entries)`, { cause: read.error })
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** Everything `read(offset)` yields, failing naming `what` when it rejects or does not end within `ms`. */
export function readAll(log: StreamDurability, offset: string, ms: number, what: string): Promise<Entry[]> {
  const done = tail(log, offset).done.catch((error: unknown) => {
    throw new Error(`Contract violated: ${what} (it failed: ${messageOf(error)})`, { cause: error })
  })
  return within(done, ms, what)
}

/** The rejection of `promise`, failing when it resolves. */
export async function refusal(promise: Promise<unknown>, ms: number, what: string): Promise<unknown> {
  const outcome = await within(
    promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    ms,
    what,
  )
  if (!('error' in outcome)) throw new Error(`Contract violated: ${what} (it resolved)`)
  return outcome.error
}
