/**
 * Takeover latency (issue 12): from the attach request to the first NEW chunk
 * its client receives, through core's `resumeServerSentEventsResponse` with a
 * `sandboxRunDriver` over `memoryStream` + `InMemoryRunStore` +
 * `InMemoryLockStore`. The drive is an in-memory replay of the whole run,
 * aligned against the stored log (what `attach: true` does), so the figure is
 * the driver's own cost: the claim, the quiescence window and the alignment,
 * not a harness's journal preflight. Goal: <= fenceQuietMs + 300 ms. With
 * several attaches at once, exactly one may drive; the bench checks it. The
 * same measure runs over other stores (`stores`: the PostgreSQL ones in
 * `postgres-stores.ts`).
 */
import { randomUUID } from 'node:crypto'
import { EventType, InMemoryRunStore, memoryStream, resumeServerSentEventsResponse, type RunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import { alignToStoredLog, sandboxRunDriver } from '@tanstack/ai-sandbox'
import { sseMessages } from '@testing/support/sse-client'
import { BenchError, median, percentile } from './stats.js'

/** The stores a takeover is measured over: `open()` once per run (fresh in-memory ones, or one shared database). */
export interface LatencyStores {
  readonly name: string
  open(): { runs: RunStore; locks: LockStore; stream: (source: Request | { runId: string }) => StreamDurability }
}

/** Core's in-memory stores, fresh per run. */
export const IN_MEMORY_STORES: LatencyStores = {
  name: 'in-memory',
  open: () => ({ runs: new InMemoryRunStore(), locks: new InMemoryLockStore(), stream: (source) => memoryStream(source) }),
}

/** One row of the table. */
export interface TakeoverLatencyRow {
  readonly stores: string
  readonly fenceQuietMs: number
  /** Clients attaching to the run at once. */
  readonly attaches: number
  readonly runs: number
  /** Median ms from the attach to the first chunk past the stored prefix, over every attach of every run. */
  readonly medianMs: number
  readonly p95Ms: number
  /** `medianMs - fenceQuietMs`: what the takeover costs beyond the quiescence window. */
  readonly overQuietMs: number
  /** Drives started per run (must be 1). */
  readonly drivesPerRun: number
}

const threadId = 'bench-thread'

function runChunks(runId: string, count: number): StreamChunk[] {
  return [
    { type: EventType.RUN_STARTED, runId, threadId, timestamp: 1 },
    ...Array.from({ length: count - 2 }, (_, i) => ({ type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm1', delta: `token ${i} `, timestamp: 2 + i }) as StreamChunk),
    { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: count + 1 },
  ] as StreamChunk[]
}

async function* replay(chunks: readonly StreamChunk[]): AsyncGenerator<StreamChunk> {
  for (const chunk of chunks) yield chunk
}

/** ms from each attach to its first new chunk, for one detached run of `total` chunks with `prefix` stored. */
async function timeOne(stores: LatencyStores, fenceQuietMs: number, attaches: number, total: number, prefix: number): Promise<{ latencies: number[]; drives: number }> {
  const runId = `bench-takeover-${randomUUID()}`
  const chunks = runChunks(runId, total)
  const { runs, locks, stream } = stores.open()
  await runs.createOrResume({ runId, threadId, startedAt: Date.now(), status: 'running' })
  await stream({ runId }).append(chunks.slice(0, prefix))
  const background: Promise<unknown>[] = []
  let drives = 0
  const attach = async (): Promise<number> => {
    const start = performance.now()
    const request = new Request(`http://bench.test/api/run?runId=${encodeURIComponent(runId)}&offset=-1`)
    const response = resumeServerSentEventsResponse({
      adapter: stream(request),
      driver: sandboxRunDriver({
        request,
        runs,
        locks,
        durability: () => stream({ runId }),
        drive: () => (drives++, alignToStoredLog(replay(chunks), { durability: stream({ runId }) })),
        fenceQuietMs,
        waitUntil: (p) => void background.push(p),
      }),
    })
    let events = 0
    let firstNewAt: number | undefined
    for await (const _message of sseMessages(response.body!)) {
      events += 1
      if (events === prefix + 1 && firstNewAt === undefined) firstNewAt = performance.now()
    }
    if (events !== total) throw new BenchError(`takeover bench: an attach received ${events} of ${total} chunks`)
    return firstNewAt! - start
  }
  const latencies = await Promise.all(Array.from({ length: attaches }, attach))
  await Promise.all(background)
  if (drives !== 1) throw new BenchError(`takeover bench: ${drives} drives for one run (exactly one may drive)`)
  return { latencies, drives }
}

/**
 * Time takeovers for each quiescence window and attach count.
 *
 * @param options.runs - Runs per row.
 * @param options.windows - `fenceQuietMs` values, in ms.
 * @param options.attaches - Concurrent attach counts.
 * @param options.stores - The stores (default {@link IN_MEMORY_STORES}).
 */
export async function benchTakeoverLatency(options: { runs: number; windows: readonly number[]; attaches: readonly number[]; stores?: LatencyStores }): Promise<TakeoverLatencyRow[]> {
  const stores = options.stores ?? IN_MEMORY_STORES
  const rows: TakeoverLatencyRow[] = []
  for (const fenceQuietMs of options.windows) {
    for (const attaches of options.attaches) {
      const samples: number[] = []
      let drives = 0
      for (let i = 0; i < options.runs; i++) {
        const one = await timeOne(stores, fenceQuietMs, attaches, 2000, 1000)
        samples.push(...one.latencies)
        drives += one.drives
      }
      const medianMs = median(samples)
      rows.push({ stores: stores.name, fenceQuietMs, attaches, runs: options.runs, medianMs, p95Ms: percentile(samples, 95), overQuietMs: medianMs - fenceQuietMs, drivesPerRun: drives / options.runs })
    }
  }
  return rows
}
