// The host that started a durable run settles its record; on a store with the
// engine-enforced fence (`updateAtEpoch`) that write is conditional on no
// driver having claimed the run, so a claim landing between the host's read
// and its write wins. The store here is core's InMemoryRunStore with an
// `updateAtEpoch` that checks and writes in one synchronous step, and a `get`
// that can be made to answer late (the race).
import { EventType, InMemoryRunStore, type RunRecord, type StreamChunk } from '@tanstack/ai'
import { describe, expect, it, vi } from 'vitest'
import type { EpochFencedRunStore } from '../../src/durability/epoch-fence.js'
import { holdStartedRunLease, settleStartedRun } from '../../src/middleware/run-lease.js'

function fencedStore(): EpochFencedRunStore & { staleGet: (record: RunRecord | undefined) => void } {
  const inner = new InMemoryRunStore()
  let stale: RunRecord | undefined
  return {
    createOrResume: (input) => inner.createOrResume(input),
    findActiveRun: (threadId) => inner.findActiveRun(threadId),
    update: (runId, patch) => inner.update(runId, patch),
    get: async (runId) => stale ?? inner.get(runId),
    staleGet: (record) => void (stale = record),
    async updateAtEpoch(runId, epoch, patch) {
      const record = await inner.get(runId)
      if (!record || record.driverEpoch !== epoch) return false
      await inner.update(runId, patch)
      return true
    },
  }
}

const finished = { kind: 'ended', lastTerminal: { type: EventType.RUN_FINISHED, runId: 'r', threadId: 't', timestamp: 1 } as StreamChunk } as const
const lease = { release: () => undefined, lost: false }

describe('settleStartedRun on an epoch-fenced store', () => {
  it('settles the record while no driver claimed the run', async () => {
    const runs = fencedStore()
    await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    await settleStartedRun(runs, 'r', finished, false, lease, undefined)
    expect(await runs.get('r')).toMatchObject({ status: 'completed' })
  })

  it('a driver that claimed after the host read the record keeps it: the conditional write is refused and logged', async () => {
    const runs = fencedStore()
    await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    runs.staleGet({ runId: 'r', threadId: 't', status: 'running', startedAt: 1 })
    await runs.update('r', { driverEpoch: 1 })
    const errors = vi.fn()
    await settleStartedRun(runs, 'r', finished, false, lease, { errors } as never)
    runs.staleGet(undefined)
    expect(await runs.get('r'), 'the record stays the driver’s').toMatchObject({ status: 'running', driverEpoch: 1 })
    expect(errors).toHaveBeenCalledWith(expect.stringContaining('refused the terminal status'))
  })
})

describe('holdStartedRunLease', () => {
  /** A lock store whose holder's signal the test aborts, as a store does when the lease is lost or the store closes. */
  function abortableLocks() {
    const controller = new AbortController()
    const locks = { withLock: async <T>(_key: string, fn: (signal: AbortSignal) => Promise<T>) => fn(controller.signal) }
    return { locks, loseLease: () => controller.abort(new Error('the store closed')) }
  }
  const recordingLogger = () => {
    const errors: string[] = []
    return { errors, logger: { errors: (message: string) => void errors.push(message) } as never }
  }

  it('reports a lease lost while the run is live', async () => {
    const { locks, loseLease } = abortableLocks()
    const { errors, logger } = recordingLogger()
    const lease = await holdStartedRunLease(locks, 'run-live', logger)
    loseLease()
    expect(lease.lost).toBe(true)
    expect(errors.join('\n')).toMatch(/lost its driver lease while it was live/)
    lease.release()
  })

  it('says nothing when the lease goes after release, as when the app closes its stores right after a detach (second new-user run, L2)', async () => {
    const { locks, loseLease } = abortableLocks()
    const { errors, logger } = recordingLogger()
    const lease = await holdStartedRunLease(locks, 'run-released', logger)
    lease.release()
    loseLease()
    expect(lease.lost).toBe(false)
    expect(errors).toEqual([])
  })
})
