// The driver over SQLite when its own epoch check is fooled: a run store whose
// `get` keeps answering the driver's epoch after a successor claimed (the
// window between the check and the write that spec 002 calls "not
// airtight"). SQLite's own check (`atEpoch`, `updateAtEpoch`) still refuses
// the stale append and the stale terminal status, and the driver treats that
// refusal as a lost claim.
import { EventType, type RunStore, type StreamChunk } from '@tanstack/ai'
import { RunClaimLostError, sandboxRunDriver } from '@tanstack/ai-sandbox'
import { describe, expect, it } from 'vitest'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

function chunk(delta: string): StreamChunk {
  return { type: EventType.TEXT_MESSAGE_CONTENT, messageId: 'm', delta, timestamp: Date.now() } as StreamChunk
}

describe('the engine-enforced fence under a driver whose epoch check is fooled', () => {
  it("refuses the superseded driver's append and terminal status; the log holds no stale chunk", async () => {
    const stores = dbs.open({ leaseMs: 3000 })
    const runId = `engine-fence-${Date.now()}`
    await stores.runs.createOrResume({ runId, threadId: 't-engine-fence', startedAt: Date.now() })
    await stores.runs.update(runId, { detachedSince: Date.now() })

    // Once `stale.epoch` is set, get() reports the epoch it last saw: the driver's check passes, the database knows better.
    const stale: { epoch?: number } = {}
    const runs: RunStore & Pick<typeof stores.runs, 'updateAtEpoch'> = {
      createOrResume: (input) => stores.runs.createOrResume(input),
      findActiveRun: (threadId) => stores.runs.findActiveRun(threadId),
      update: (id, patch) => stores.runs.update(id, patch),
      updateAtEpoch: (id, epoch, patch) => stores.runs.updateAtEpoch(id, epoch, patch),
      get: async (id) => {
        const record = await stores.runs.get(id)
        return record && stale.epoch !== undefined ? { ...record, driverEpoch: stale.epoch } : record
      },
    }

    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let firstStored!: () => void
    const stored = new Promise<void>((resolve) => (firstStored = resolve))
    async function* drive(): AsyncGenerator<StreamChunk> {
      yield { type: EventType.RUN_STARTED, runId, threadId: 't-engine-fence', timestamp: Date.now() } as StreamChunk
      yield chunk('before')
      firstStored()
      await gate
      yield chunk('stale')
      yield { type: EventType.RUN_FINISHED, runId, threadId: 't-engine-fence', timestamp: Date.now() } as StreamChunk
    }

    const driver = sandboxRunDriver({
      request: new Request(`http://host/attach?runId=${runId}`),
      runs,
      locks: stores.locks,
      durability: (id) => stores.stream({ runId: id }),
      drive: () => drive(),
      fenceQuietMs: 20,
    })
    const driven = driver.claim({ runs, locks: stores.locks, runId }, (claim) => driver.pipe(driver.drive({ runId, threadId: 't-engine-fence', signal: claim.signal }), { runId, threadId: 't-engine-fence', signal: claim.signal }))

    await stored
    await expect.poll(async () => (await stores.stream({ runId }).snapshot()).length, { timeout: 5000 }).toBe(2)
    stale.epoch = 1
    // A successor's claim, then its first append at its own epoch.
    await stores.runs.update(runId, { driverEpoch: 2 })
    await stores.stream({ runId }).atEpoch(2).append([chunk('successor')])
    release()

    await expect(driven).rejects.toBeInstanceOf(RunClaimLostError)
    const log = (await stores.stream({ runId }).snapshot()).map((entry) => (entry.chunk as { delta?: string; type: string }).delta ?? entry.chunk.type)
    expect(log, 'nothing the superseded driver sent after the claim was stored').toEqual([EventType.RUN_STARTED, 'before', 'successor'])
    const record = await stores.runs.get(runId)
    expect(record, "the superseded driver's terminal status was refused").toMatchObject({ status: 'running', driverEpoch: 2 })
  })
})
