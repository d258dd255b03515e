/**
 * Shared parts of the `sandboxRunDriver` tests: a run's chunks, a seeded run
 * (record + stored prefix in core's `memoryStream`), a capturing logger, a
 * `LockStore` whose lease a test can revoke (a lost lease), and an SSE body
 * reader. Everything wraps core's real stores; nothing replaces them.
 */
import { EventType, InMemoryRunStore, memoryStream, normalizeStreamChunk, type AdapterYieldChunk, type RunStore, type StreamChunk } from '@tanstack/ai'
import { resolveDebugOption } from '@tanstack/ai/adapter-internals'
import { restoreInboundChunk } from '@tanstack/ai/client'
import type { LockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { sseChunks } from '../helpers/sse.js'

export const threadId = 'thread-takeover'
export const newRunId = (): string => `run-${randomUUID()}`

/** One run's chunks: RUN_STARTED, a text message of `words` deltas, RUN_FINISHED. */
export function runChunks(runId: string, words: ReadonlyArray<string>): StreamChunk[] {
  const messageId = `msg-${runId}`
  return [
    { type: EventType.RUN_STARTED, runId, threadId, timestamp: 1 },
    { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant', timestamp: 2 },
    ...words.map((delta, i) => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta, timestamp: 10 + i })),
    { type: EventType.TEXT_MESSAGE_END, messageId, timestamp: 1000 },
    { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: 1001 },
  ] as StreamChunk[]
}

/** A 'running' record plus the first `prefix` chunks already stored (what a dead host delivered). */
export async function seedRun(options: { runs?: RunStore; words?: string[]; prefix?: number } = {}) {
  const runs = options.runs ?? new InMemoryRunStore()
  const runId = newRunId()
  const chunks = runChunks(runId, options.words ?? ['a', 'b', 'c', 'd', 'e', 'f'])
  await runs.createOrResume({ runId, threadId, startedAt: Date.now(), status: 'running' })
  const log = memoryStream({ runId })
  const prefix = options.prefix ?? 3
  if (prefix > 0) await log.append(chunks.slice(0, prefix))
  return { runs, runId, chunks, log }
}

/** A real InternalLogger whose lines (any level) are collected. */
export function capturingLogger() {
  const lines: string[] = []
  const sink = (m: string, meta?: Record<string, unknown>): void => {
    const error = meta?.error
    lines.push(error instanceof Error ? `${m}: ${error.message}` : m)
  }
  const logger = resolveDebugOption({ logger: { debug: sink, info: sink, warn: sink, error: sink } })
  return { logger, lines }
}

/** Yields `chunks` with `delayMs` between them; `gate` (if given) is awaited before chunk `gateAt`. */
export async function* paced(chunks: ReadonlyArray<StreamChunk>, delayMs = 0, gate?: { at: number; wait: Promise<void> }): AsyncGenerator<StreamChunk> {
  for (const [i, chunk] of chunks.entries()) {
    if (gate && i === gate.at) await gate.wait
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs))
    yield chunk
  }
}

/** A deferred promise. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

/**
 * A per-key mutex whose holder's lease can be revoked, like a lease-backed
 * distributed lock whose renewal failed: `revoke(key)` aborts the holder's
 * signal and hands the lock to the next waiter while the old holder's
 * callback is still running.
 */
export class RevocableLockStore implements LockStore {
  private readonly tails = new Map<string, Promise<void>>()
  private readonly holders = new Map<string, { controller: AbortController; release: () => void }>()
  acquired = 0

  withLock<T>(key: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const prior = this.tails.get(key) ?? Promise.resolve()
    const released = deferred()
    this.tails.set(key, prior.then(() => released.promise))
    return prior.then(async () => {
      const controller = new AbortController()
      this.holders.set(key, { controller, release: released.resolve })
      this.acquired += 1
      try {
        return await fn(controller.signal)
      } finally {
        if (this.holders.get(key)?.controller === controller) this.holders.delete(key)
        released.resolve()
      }
    })
  }

  /** Revoke the current holder's lease of `key`. */
  revoke(key: string): void {
    const holder = this.holders.get(key)
    if (!holder) throw new Error(`no holder of ${key}`)
    this.holders.delete(key)
    holder.controller.abort(new Error('lease expired'))
    holder.release()
  }

  held(key: string): boolean {
    return this.holders.has(key)
  }
}

/** A chunk in the shape a client reads it off the wire (core's normalization, then the client's restore). */
export function delivered(chunk: StreamChunk): StreamChunk {
  return restoreInboundChunk(normalizeStreamChunk(chunk as AdapterYieldChunk)[0]!) as StreamChunk
}

/** The chunks of an SSE body, restored as the client does (`restoreInboundChunk`), until the body ends. */
export async function readSse(response: Response): Promise<StreamChunk[]> {
  return response.body === null ? [] : sseChunks(response.body)
}

/** Wait until `check()` is true, polling every 5 ms, up to `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 5))
  }
}
