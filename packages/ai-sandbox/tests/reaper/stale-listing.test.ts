/**
 * Issue 29 item 1: the sweep decides "expired" from the record as it is once
 * it holds the run's claim, not from its listing. A viewer that came back
 * (its attach cleared `detachedSince`) or left again (a fresh
 * `detachedSince`) while the sweep waited for the run's lease keeps its run:
 * no `failed` record, no `RUN_ERROR` in the log it reads, no reclaim, no
 * `driverEpoch` bump. Spec 002: the reaper closes out runs "nobody comes back
 * for"; 000: `detachedRunTtlMs` is the only detached-run TTL.
 */
import { EventType, InMemoryRunStore, memoryStream, type StreamChunk } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { reapDetachedRuns, type ReapResult } from '../../src/index.js'
import { runDriverLockKey } from '../../src/durability/claim.js'

const TTL = 60_000

async function detachedLongAgo(runs: InMemoryRunStore): Promise<string> {
  const runId = `stale-${randomUUID()}`
  await runs.createOrResume({ runId, threadId: `thread-${runId}`, startedAt: Date.now() - 10 * TTL })
  await runs.update(runId, { detachedSince: Date.now() - 5 * TTL, sandboxKey: 'key' })
  await memoryStream({ runId }).append([{ type: EventType.RUN_STARTED, runId, threadId: `thread-${runId}`, timestamp: Date.now() } as StreamChunk])
  return runId
}

/**
 * Sweep while another holder (the viewer's driver) has the run's lease; once
 * the sweep is waiting, `meanwhile` changes the record as the viewer would,
 * and the lease is let go.
 */
async function sweepWhileHeld(meanwhile: (runs: InMemoryRunStore, runId: string) => Promise<void>): Promise<{ result: ReapResult; runs: InMemoryRunStore; runId: string; reclaimed: string[] }> {
  const runs = new InMemoryRunStore()
  const locks = new InMemoryLockStore()
  const runId = await detachedLongAgo(runs)
  const reclaimed: string[] = []
  let release!: () => void
  const held = locks.withLock(runDriverLockKey(runId), () => new Promise<void>((resolve) => (release = resolve)))
  const sweep = reapDetachedRuns({
    runs,
    locks,
    durability: (id) => memoryStream({ runId: id }),
    hasFinished: async () => ({ state: 'producing' }),
    drive: () => {
      throw new Error('drive must not be called')
    },
    now: Date.now(),
    detachedRunTtlMs: TTL,
    fenceQuietMs: 0,
    reclaim: async (record) => void reclaimed.push(record.runId),
  })
  // Let the sweep list the run and queue for its lease.
  await new Promise((resolve) => setTimeout(resolve, 50))
  await meanwhile(runs, runId)
  release()
  await held
  return { result: await sweep, runs, runId, reclaimed }
}

async function expectUntouched({ result, runs, runId, reclaimed }: Awaited<ReturnType<typeof sweepWhileHeld>>): Promise<void> {
  expect(result.entries).toEqual([expect.objectContaining({ runId, outcome: 'producing', expired: false })])
  expect(await runs.get(runId)).toMatchObject({ status: 'running' })
  expect((await runs.get(runId))?.driverEpoch, 'the sweep claimed nothing').toBeUndefined()
  const log = (await memoryStream({ runId }).snapshot()).map((entry) => entry.chunk.type)
  expect(log, 'no RUN_ERROR reached the log the viewer reads').toEqual([EventType.RUN_STARTED])
  expect(reclaimed, 'the sandbox was not reclaimed').toEqual([])
}

describe('reapDetachedRuns decides under the claim, from the record as it is then', () => {
  it('a viewer that re-attached while the sweep waited for the lease keeps its run', async () => {
    await expectUntouched(await sweepWhileHeld((runs, runId) => runs.update(runId, { detachedSince: undefined })))
  })

  it('a viewer that left again (a fresh detachedSince) while the sweep waited keeps its run until the TTL counts from then', async () => {
    await expectUntouched(await sweepWhileHeld((runs, runId) => runs.update(runId, { detachedSince: Date.now() })))
  })

  it('a run still detached past its TTL when the claim is taken is expired, as before', async () => {
    const { result, runs, runId, reclaimed } = await sweepWhileHeld(async () => undefined)
    expect(result.entries).toEqual([expect.objectContaining({ runId, outcome: 'expired', expired: true })])
    expect(await runs.get(runId)).toMatchObject({ status: 'failed' })
    expect(reclaimed).toEqual([runId])
  })
})

describe('a run store that never answers', () => {
  it('a listReclaimable that hangs ends the sweep after runBudgetMs with the error, instead of hanging it (issue 29 review)', async () => {
    const runs = new InMemoryRunStore()
    runs.listReclaimable = () => new Promise(() => {})
    const result = await reapDetachedRuns({
      runs,
      locks: new InMemoryLockStore(),
      durability: (id) => memoryStream({ runId: id }),
      hasFinished: async () => ({ state: 'producing' }),
      drive: () => {
        throw new Error('drive must not be called')
      },
      now: Date.now(),
      detachedRunTtlMs: TTL,
      runBudgetMs: 200,
    })
    expect(result.entries).toEqual([])
    expect(String(result.error)).toMatch(/listReclaimable did not settle within runBudgetMs \(200 ms\)/)
  })
})
