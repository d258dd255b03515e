/**
 * `reapDetachedRuns` over core's in-memory stores with scripted probes and
 * drives (no sandbox): the outcomes a real provider cannot stage on demand.
 * A replay over budget is stopped and terminalized anyway
 * (`budget-exceeded`, `terminalizedAnyway`, and kept when `reclaim-failed`
 * overwrites it); a sweep racing a live driver that holds the run's lease
 * gives up (`not-claimed`) without writing anything, not even a
 * `driverEpoch`; probes that throw, lie or hang are `unknown`; randomized
 * sweeps over producing runs never drive or touch one (SWEEP_TRIALS, 100 in
 * CI and at full size: in memory they take tens of ms; the seed is
 * printed and SWEEP_SEED replays it); `fenceQuietMs` is the
 * claim's quiet window; `maxRuns` defers the
 * newest; a failing `listReclaimable` resolves with the error.
 */
import { EventType, InMemoryRunStore, memoryStream, RUN_CANCEL_REASON, type RunRecord, type RunStore, type StreamChunk } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { reapDetachedRuns, type ReapOptions, type RunExitProbe } from '../../src/index.js'
import { runDriverLockKey } from '../../src/durability/claim.js'
import { seededRandom, testSeed } from '../helpers/seeded-random.js'
import { capturingLogger } from './helpers.js'

const TTL = 60_000
const SWEEP_TRIALS = Number(process.env.SWEEP_TRIALS ?? 100)

/** A detached run: record `running` with `detachedSince` and `sandboxKey`, and a log holding its first chunks. */
async function seed(runs: RunStore, label: string, detachedAgoMs = 1_000): Promise<{ runId: string; threadId: string }> {
  const runId = `sweep-${label}-${randomUUID()}`
  const threadId = `thread-${label}`
  await runs.createOrResume({ runId, threadId, startedAt: Date.now() - 10_000 })
  await runs.update(runId, { detachedSince: Date.now() - detachedAgoMs, sandboxKey: `key-${label}` })
  await memoryStream({ runId }).append([{ type: EventType.RUN_STARTED, runId, threadId, timestamp: Date.now() } as StreamChunk])
  return { runId, threadId }
}

/** A stream that yields one text chunk, then never ends until `signal` aborts. */
async function* hanging(signal: AbortSignal): AsyncGenerator<StreamChunk> {
  yield { type: EventType.TEXT_MESSAGE_START, messageId: 'm', role: 'assistant', timestamp: Date.now() } as StreamChunk
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

function baseOptions(runs: RunStore, overrides: Partial<ReapOptions> = {}): ReapOptions {
  return {
    runs,
    locks: new InMemoryLockStore(),
    durability: (runId) => memoryStream({ runId }),
    hasFinished: async () => ({ state: 'producing' }),
    drive: () => {
      throw new Error('drive must not be called')
    },
    now: Date.now(),
    detachedRunTtlMs: TTL,
    ...overrides,
  }
}

describe('reapDetachedRuns: budget, races, lying probes', () => {
  it('a replay over runBudgetMs is stopped and terminalized anyway; reclaim-failed overwrites budget-exceeded and keeps terminalizedAnyway', async () => {
    const runs = new InMemoryRunStore()
    const slow = await seed(runs, 'slow')
    const slowAndStuck = await seed(runs, 'slow-stuck')
    const driveSignals: AbortSignal[] = []
    const reclaimed: string[] = []
    const result = await reapDetachedRuns(
      baseOptions(runs, {
        hasFinished: async () => ({ state: 'finished', exitCode: 0 }),
        drive: ({ signal }) => (driveSignals.push(signal), hanging(signal)),
        runBudgetMs: 300,
        reclaim: async (record) => {
          if (record.runId === slowAndStuck.runId) throw new Error('the provider refused to destroy it')
          reclaimed.push(record.runId)
          return { reclaimed: true }
        },
      }),
    )
    expect(result.outcomes).toMatchObject({ 'budget-exceeded': 1, 'reclaim-failed': 1, finalized: 0 })
    const budget = result.entries.find((e) => e.runId === slow.runId)!
    expect(budget).toMatchObject({ outcome: 'budget-exceeded', terminalizedAnyway: true, status: 'failed', reclaim: { reclaimed: true } })
    const stuck = result.entries.find((e) => e.runId === slowAndStuck.runId)!
    expect(stuck).toMatchObject({ outcome: 'reclaim-failed', terminalizedAnyway: true, status: 'failed' })
    expect(String(stuck.error)).toMatch(/refused to destroy/)
    expect(reclaimed, 'reclaim fired for the budget-exceeded run').toEqual([slow.runId])
    for (const run of [slow, slowAndStuck]) {
      expect(await runs.get(run.runId)).toMatchObject({ status: 'failed', error: { code: 'reap-budget-exceeded' } })
      const log = (await memoryStream({ runId: run.runId }).snapshot()).map((e) => e.chunk)
      expect(log.at(-1), 'the log ends with the budget RUN_ERROR').toMatchObject({ type: EventType.RUN_ERROR, code: 'reap-budget-exceeded' })
    }
    expect(driveSignals.map((s) => [s.aborted, s.reason]), "the drive was stopped as a cancel (so withSandbox destroys the agent's sandbox)").toEqual([
      [true, RUN_CANCEL_REASON],
      [true, RUN_CANCEL_REASON],
    ])
  }, 20_000)

  it('a reclaim that never settles is reclaim-failed after runBudgetMs; the sweep resolves', async () => {
    const runs = new InMemoryRunStore()
    const run = await seed(runs, 'wedged', 10 * TTL)
    const result = await reapDetachedRuns(baseOptions(runs, { runBudgetMs: 300, reclaim: () => new Promise(() => undefined) }))
    expect(result.outcomes).toMatchObject({ 'reclaim-failed': 1, expired: 0 })
    const entry = result.entries.find((e) => e.runId === run.runId)!
    expect(entry).toMatchObject({ outcome: 'reclaim-failed', status: 'failed' })
    expect(String(entry.error)).toMatch(/did not settle within runBudgetMs \(300 ms\)/)
  }, 20_000)

  it('a sweep racing a live driver that holds the lease gives up: not-claimed, nothing written, no driverEpoch bump even after the lease frees', async () => {
    const runs = new InMemoryRunStore()
    const locks = new InMemoryLockStore()
    const run = await seed(runs, 'held', 10 * TTL)
    await runs.update(run.runId, { driverEpoch: 4 })
    let release!: () => void
    const held = locks.withLock(runDriverLockKey(run.runId), () => new Promise<void>((resolve) => (release = resolve)))
    let drives = 0
    const result = await reapDetachedRuns(baseOptions(runs, { locks, runBudgetMs: 400, drive: () => (drives++, hanging(new AbortController().signal)), hasFinished: async () => ({ state: 'producing' }) }))
    expect(result.outcomes).toMatchObject({ 'not-claimed': 1, expired: 0 })
    expect(result.entries[0]).toMatchObject({ outcome: 'not-claimed', expired: true, status: 'running' })
    release()
    await held
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(drives).toBe(0)
    const record = await runs.get(run.runId)
    expect(record, 'the live driver still owns the run: same epoch, still running, still detached').toMatchObject({ status: 'running', driverEpoch: 4, detachedSince: expect.any(Number) })
    expect((await memoryStream({ runId: run.runId }).snapshot()).length, 'nothing reached the log').toBe(1)
  }, 10_000)

  it('a probe that throws, answers something that is not a RunExitProbe, or never answers is unknown; no run is driven', async () => {
    const runs = new InMemoryRunStore()
    const throws = await seed(runs, 'throws')
    const lies = await seed(runs, 'lies')
    const hangs = await seed(runs, 'hangs')
    const { logger, errors } = capturingLogger()
    const result = await reapDetachedRuns(
      baseOptions(runs, {
        logger,
        runBudgetMs: 300,
        hasFinished: (record: RunRecord): Promise<RunExitProbe> => {
          if (record.runId === throws.runId) throw new Error('sandbox unreachable')
          if (record.runId === lies.runId) return Promise.resolve({ state: 'finished' } as unknown as RunExitProbe)
          return new Promise(() => {})
        },
      }),
    )
    expect(result.outcomes).toMatchObject({ unknown: 3, finalized: 0, 'not-claimed': 0 })
    expect(result.entries.find((e) => e.runId === throws.runId)?.probe).toMatchObject({ state: 'unknown', error: expect.any(Error) })
    expect(result.entries.find((e) => e.runId === lies.runId)?.probe).toMatchObject({ state: 'unknown' })
    expect(result.entries.find((e) => e.runId === hangs.runId)?.probe).toMatchObject({ state: 'unknown', detail: expect.stringMatching(/runBudgetMs/) })
    expect(errors.join('\n')).toMatch(/hasFinished threw/)
    for (const run of [throws, lies, hangs]) expect((await runs.get(run.runId))?.status).toBe('running')
  })

  it(`${SWEEP_TRIALS} randomized sweeps over producing and unknown runs within their TTL: 0 drives, 0 runs touched`, async () => {
    const random = seededRandom(testSeed('SWEEP_SEED', 'reaper sweeps'))
    const runs = new InMemoryRunStore()
    const seeded = await Promise.all(Array.from({ length: 8 }, (_, i) => seed(runs, `live-${i}`, Math.floor(random() * (TTL - 5_000)))))
    const before = await Promise.all(seeded.map((run) => runs.get(run.runId)))
    let drives = 0
    let sweeps = 0
    for (let i = 0; i < SWEEP_TRIALS; i++) {
      const result = await reapDetachedRuns(
        baseOptions(runs, {
          drive: () => (drives++, hanging(new AbortController().signal)),
          hasFinished: async () => (random() < 0.5 ? { state: 'producing' } : { state: 'unknown', detail: 'random' }),
          maxRuns: 1 + Math.floor(random() * 8),
        }),
      )
      sweeps++
      expect(result.outcomes.producing + result.outcomes.unknown).toBe(result.entries.length)
    }
    expect(sweeps).toBe(SWEEP_TRIALS)
    expect(drives, 'no sweep drove a run it could not prove finished').toBe(0)
    expect(await Promise.all(seeded.map((run) => runs.get(run.runId))), 'every record is exactly as seeded').toEqual(before)
  })

  it('maxRuns sweeps the oldest detaches first and defers the rest; a failing listReclaimable resolves with the error', async () => {
    const runs = new InMemoryRunStore()
    const oldest = await seed(runs, 'oldest', 30_000)
    const middle = await seed(runs, 'middle', 20_000)
    await seed(runs, 'newest', 10_000)
    const result = await reapDetachedRuns(baseOptions(runs, { maxRuns: 2 }))
    expect(result.entries.map((e) => e.runId)).toEqual([oldest.runId, middle.runId])
    expect(result.deferred).toBe(1)

    const broken: RunStore = { ...runs, get: (id) => runs.get(id), update: (id, p) => runs.update(id, p), createOrResume: (i) => runs.createOrResume(i), findActiveRun: (t) => runs.findActiveRun(t), listReclaimable: () => Promise.reject(new Error('database is down')) }
    const failed = await reapDetachedRuns(baseOptions(broken))
    expect(failed.entries).toEqual([])
    expect(String(failed.error)).toMatch(/database is down/)
    expect(Object.values(failed.outcomes).every((n) => n === 0)).toBe(true)
  })

  it('fenceQuietMs is the claim\'s quiet window: an append inside it delays the drive until it lands, and a short window does not wait out the 5 s default', async () => {
    const runs = new InMemoryRunStore()
    const run = await seed(runs, 'quiet')
    const log = memoryStream({ runId: run.runId })
    // A predecessor's late append, 150 ms into the sweep: inside the first 400 ms window.
    const late = setTimeout(() => void log.append([{ type: EventType.TEXT_MESSAGE_START, messageId: 'late', role: 'assistant', timestamp: Date.now() } as StreamChunk]), 150)
    let seenAtDrive = -1
    const started = Date.now()
    const result = await reapDetachedRuns(
      baseOptions(runs, {
        fenceQuietMs: 400,
        hasFinished: async () => ({ state: 'finished', exitCode: 0 }),
        drive: async function* ({ runId, threadId }) {
          seenAtDrive = (await memoryStream({ runId }).snapshot()).length
          yield { type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', timestamp: Date.now() } as StreamChunk
        },
      }),
    )
    clearTimeout(late)
    expect(result.entries[0]).toMatchObject({ outcome: 'finalized', status: 'completed' })
    expect(seenAtDrive, "the predecessor's append inside the window had landed before the drive began").toBe(2)
    // A generous bound, only to tell the option from the 5 s default it replaces (which would take 10 s here: two windows).
    expect(Date.now() - started, 'the sweep used the 400 ms window, not DEFAULT_FENCE_QUIET_MS').toBeLessThan(4_000)
  }, 15_000)

  it('a finished run whose drive throws is finalized as failed, its log says why, and reclaim runs', async () => {
    const runs = new InMemoryRunStore()
    const run = await seed(runs, 'drive-throws')
    const reclaimed: string[] = []
    const result = await reapDetachedRuns(
      baseOptions(runs, {
        hasFinished: async () => ({ state: 'finished', exitCode: 0 }),
        drive: () => {
          throw new Error('the sandbox is gone')
        },
        reclaim: async (record) => void reclaimed.push(record.runId),
      }),
    )
    expect(result.entries[0]).toMatchObject({ outcome: 'finalized', status: 'failed' })
    expect(await runs.get(run.runId)).toMatchObject({ status: 'failed', error: { message: 'the sandbox is gone' }, driverEpoch: 1 })
    expect((await memoryStream({ runId: run.runId }).snapshot()).at(-1)?.chunk).toMatchObject({ type: EventType.RUN_ERROR })
    expect(reclaimed).toEqual([run.runId])
  }, 15_000)
})
