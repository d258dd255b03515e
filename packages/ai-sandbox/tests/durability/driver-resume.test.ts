/**
 * `sandboxRunDriver` through core's `resumeServerSentEventsResponse({ adapter,
 * driver })`, as an attach route uses it: a `Request`, the SSE body read to
 * its end. The drive replays the whole run and aligns it against the stored
 * log (`alignToStoredLog`, what `withSandbox`'s `attach: true` does), so the
 * client must see the stored prefix then the driven remainder, once each.
 */
import { EventType, InMemoryRunStore, memoryStream, resumeServerSentEventsResponse, type RunDriverOptions, type RunStore, type StreamChunk } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { describe, expect, it } from 'vitest'
import { alignToStoredLog, chunkFingerprint, sandboxRunDriver } from '../../src/index.js'
import { capturingLogger, delivered, paced, readSse, seedRun } from './driver-helpers.js'

function attach(runs: RunStore, runId: string, drive: RunDriverOptions['drive'], locks = new InMemoryLockStore()) {
  const request = new Request(`http://host.test/api/run?runId=${encodeURIComponent(runId)}&offset=-1`)
  const { logger, lines } = capturingLogger()
  const background: Promise<unknown>[] = []
  const response = resumeServerSentEventsResponse({
    adapter: memoryStream(request),
    driver: sandboxRunDriver({ request, runs, locks, durability: () => memoryStream(request), drive, fenceQuietMs: 30, waitUntil: (p) => void background.push(p), logger }),
  })
  return { response, lines, settled: () => Promise.all(background) }
}

/** A replay of the whole run from its start, aligned against what the log already holds. */
const replay = (runId: string, chunks: StreamChunk[], delayMs = 2) => alignToStoredLog(paced(chunks, delayMs), { durability: memoryStream({ runId }) })

describe('sandboxRunDriver through resumeServerSentEventsResponse', () => {
  it('the client sees the stored prefix then the driven remainder: no duplicate, no gap', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 4 })
    let drives = 0
    const seen: { runId: string; threadId: string }[] = []
    const { response, settled } = attach(runs, runId, (input) => {
      drives++
      seen.push({ runId: input.runId, threadId: input.threadId })
      return replay(input.runId, chunks)
    })
    expect(response.status).toBe(200)
    const transcript = await readSse(response)
    await settled()
    expect(drives).toBe(1)
    expect(seen).toEqual([{ runId, threadId: 'thread-takeover' }])
    expect(transcript.map(chunkFingerprint)).toEqual(chunks.map(delivered).map(chunkFingerprint))
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
  })

  it('four attaches at once: one drives, every client sees the run exactly once', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 2 })
    const locks = new InMemoryLockStore()
    let drives = 0
    const routes = [0, 1, 2, 3].map(() => attach(runs, runId, (input) => (drives++, replay(input.runId, chunks)), locks))
    const transcripts = await Promise.all(routes.map((r) => readSse(r.response)))
    await Promise.all(routes.map((r) => r.settled()))
    expect(drives).toBe(1)
    for (const t of transcripts) expect(t.map(chunkFingerprint)).toEqual(chunks.map(delivered).map(chunkFingerprint))
    const notDriving = routes.flatMap((r) => r.lines).filter((l) => l.includes('not driving this run'))
    expect(notDriving).toHaveLength(3)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
  })

  it('a throwing drive is logged; the response still serves the log and ends with the failure', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 3 })
    const { response, lines, settled } = attach(runs, runId, () => {
      throw new Error('sandbox is gone')
    })
    const transcript = await readSse(response)
    await settled()
    expect(transcript.slice(0, 3)).toEqual(chunks.slice(0, 3).map(delivered))
    expect(transcript.at(-1)).toMatchObject({ type: EventType.RUN_ERROR, message: 'sandbox is gone' })
    expect(transcript).toHaveLength(4)
    expect(lines.join('\n')).toMatch(/sandbox is gone/)
    expect(await runs.get(runId)).toMatchObject({ status: 'failed', error: { message: 'sandbox is gone' } })
  })

  it('a terminal run is served and not driven', async () => {
    const { runs, runId, chunks, log } = await seedRun({ prefix: 0 })
    await log.append(chunks)
    await log.close()
    await runs.update(runId, { status: 'completed', finishedAt: Date.now() })
    let drives = 0
    const { response, settled } = attach(runs, runId, () => (drives++, paced([])))
    expect(await readSse(response)).toEqual(chunks.map(delivered))
    await settled()
    expect(drives).toBe(0)
  })

  it('an unknown run drives nothing and the attach is a 400 without an offset', async () => {
    const runs = new InMemoryRunStore()
    let drives = 0
    const request = new Request('http://host.test/api/run?runId=ghost')
    const response = resumeServerSentEventsResponse({
      adapter: memoryStream(request),
      driver: sandboxRunDriver({ request, runs, locks: new InMemoryLockStore(), durability: () => memoryStream(request), drive: () => (drives++, paced([])) }),
    })
    expect(response.status).toBe(400)
    // With an offset, the driver runs, finds no record, and drives nothing (core's memoryStream fails the empty from-start join).
    const withOffset = attach(runs, 'ghost-2', () => (drives++, paced([])))
    await withOffset.response.text()
    await withOffset.settled()
    expect(drives).toBe(0)
    expect(await runs.get('ghost-2')).toBeNull()
  })
})
