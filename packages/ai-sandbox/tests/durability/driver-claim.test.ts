/**
 * `sandboxRunDriver`'s claim and fences, driven through the `claim` / `pipe`
 * it returns (what core calls), against core's `InMemoryRunStore`,
 * `memoryStream` and `InMemoryLockStore`, plus a `LockStore` whose lease can
 * be revoked. Two "hosts" are two driver objects over one store and log.
 */
import { InMemoryRunStore, memoryStream, requestRunCancel, type RunDriverOptions, type RunStore, type StreamChunk, type StreamDurability } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { describe, expect, it } from 'vitest'
import { DEFAULT_FENCE_QUIET_MS, RunClaimLostError, RunClaimNotAcquiredError, RunDriverPipeOutsideClaimError, SandboxConfigError, sandboxRunDriver } from '../../src/index.js'
import * as barrel from '../../src/index.js'
import { runDriverLockKey } from '../../src/durability/claim.js'
import { capturingLogger, deferred, paced, RevocableLockStore, seedRun, threadId, until } from './driver-helpers.js'

const request = (runId: string): Request => new Request(`http://host.test/api/run?runId=${encodeURIComponent(runId)}&offset=-1`)

/** A driver host: its own driver object over the shared store, its own lock store unless given. */
function host(runs: RunStore, runId: string, drive: RunDriverOptions['drive'], options: { locks?: RunDriverOptions['locks']; durability?: () => StreamDurability; fenceQuietMs?: number } = {}) {
  const { logger, lines } = capturingLogger()
  const driver = sandboxRunDriver({ request: request(runId), runs, locks: options.locks ?? new InMemoryLockStore(), durability: options.durability ?? (() => memoryStream({ runId })), drive, fenceQuietMs: options.fenceQuietMs ?? 20, logger })
  /** What core's resume helper does once it decided to drive: claim, then pipe the drive inside it. */
  const run = () => driver.claim({ runs: driver.runs, locks: driver.locks, runId }, (claim) => driver.pipe(driver.drive({ runId, threadId, signal: claim.signal }), { runId, threadId, signal: claim.signal }))
  return { driver, run, lines }
}

const stored = async (runId: string): Promise<StreamChunk[]> => (await memoryStream({ runId }).snapshot()).map((e) => e.chunk)

describe('sandboxRunDriver: the claim', () => {
  it('exports the public names and keeps the claim primitives internal', () => {
    expect(DEFAULT_FENCE_QUIET_MS).toBe(5000)
    for (const name of ['withRunClaim', 'fenceDurability', 'awaitLogQuiescence', 'runDriverLockKey']) expect(barrel).not.toHaveProperty(name)
  })

  it('bumps driverEpoch on each successful claim and hands the epoch to the drive', async () => {
    const { runs, runId } = await seedRun()
    const locks = new InMemoryLockStore()
    const { driver } = host(runs, runId, () => paced([]), { locks })
    const epochs: number[] = []
    for (let i = 0; i < 3; i++) {
      await driver.claim({ runs, locks, runId }, async (claim) => {
        epochs.push(claim.epoch)
        expect((await runs.get(runId))?.driverEpoch).toBe(claim.epoch)
      })
    }
    expect(epochs).toEqual([1, 2, 3])
  })

  it('refuses an unknown run and a terminal one without calling fn', async () => {
    const runs = new InMemoryRunStore()
    const locks = new InMemoryLockStore()
    const { driver } = host(runs, 'nobody', () => paced([]), { locks })
    let called = 0
    const unknown = await driver.claim({ runs, locks, runId: 'nobody' }, async () => void called++).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(RunClaimNotAcquiredError)
    expect(unknown).toMatchObject({ reason: 'unknown', runId: 'nobody' })

    const seeded = await seedRun({ runs })
    await runs.update(seeded.runId, { status: 'completed', finishedAt: Date.now() })
    const terminal = await driver.claim({ runs, locks, runId: seeded.runId }, async () => void called++).catch((e: unknown) => e)
    expect(terminal).toMatchObject({ reason: 'terminal', runId: seeded.runId })
    expect(RunClaimNotAcquiredError.isInstance(terminal)).toBe(true)
    expect(called).toBe(0)
    expect((await runs.get(seeded.runId))?.driverEpoch).toBeUndefined()
  })

  it('two concurrent drivers for one run: exactly one drives, the other waits and finds the run finished, nothing doubled', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 0 })
    const locks = new InMemoryLockStore()
    const drives: number[] = []
    const hosts = [0, 1].map((i) => host(runs, runId, () => (drives.push(i), paced(chunks, 5)), { locks }))
    const results = await Promise.allSettled(hosts.map((h) => h.run()))
    expect(drives).toHaveLength(1)
    const rejected = results.filter((r) => r.status === 'rejected')
    expect(rejected).toHaveLength(1)
    expect((rejected[0] as PromiseRejectedResult).reason).toMatchObject({ reason: 'terminal', runId })
    expect(await stored(runId)).toEqual(chunks)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 1 })
  })

  it('a log whose store checks the epoch itself is not waited on for quiescence: the drive starts at once', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 0 })
    // An engine-fenced log (what the SQLite and PostgreSQL stores give): a view per epoch. The window is a day long,
    // so a drive that waited for it would never end in this test.
    const fenced = (): StreamDurability => Object.assign(memoryStream({ runId }), { atEpoch: () => memoryStream({ runId }) })
    const h = host(runs, runId, () => paced(chunks), { durability: fenced, fenceQuietMs: 86_400_000 })
    expect(await h.run()).toMatchObject({ status: 'completed', driverEpoch: 1 })
    expect(await stored(runId)).toEqual(chunks)
  })

  it('the driver that lost the race takes the run over when the winner dies mid-drive (its lease lapses, the run still running)', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 0 })
    const locks = new RevocableLockStore()
    const stall = deferred()
    let drives = 0
    // Both attach at once (both read driverEpoch unset); the winner drives two chunks and hangs (a host that died),
    // and the other, which lost the race, drives the rest once the winner's lease is gone.
    const drive = () => (++drives === 1 ? paced(chunks, 0, { at: 2, wait: stall.promise }) : paced(chunks.slice(2)))
    const [x, y] = [host(runs, runId, drive, { locks, fenceQuietMs: 50 }), host(runs, runId, drive, { locks, fenceQuietMs: 50 })]
    const results = [x!.run().catch((e: unknown) => e), y!.run().catch((e: unknown) => e)]
    await until(async () => (await stored(runId)).length === 2)
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(drives, 'the loser waits while the winner holds the lease').toBe(1)
    locks.revoke(runDriverLockKey(runId))
    const settled = await Promise.all(results)
    expect(settled.filter((r) => r instanceof RunClaimLostError), 'the winner lost its claim').toHaveLength(1)
    expect(settled.filter((r) => !(r instanceof Error)), 'the other drove the run to its end').toEqual([expect.objectContaining({ status: 'completed', driverEpoch: 2 })])
    expect(drives).toBe(2)
    expect(await stored(runId)).toEqual(chunks)
    expect([...x!.lines, ...y!.lines].join('\n')).toMatch(/no longer holds it and the run is still running; taking it over/)
    stall.resolve()
  })

  it('a store that drops driverEpoch cannot fence, so nobody drives and the cause is logged', async () => {
    const inner = new InMemoryRunStore()
    const runs: RunStore = { ...bind(inner), update: (id, patch) => inner.update(id, { ...patch, driverEpoch: undefined }) }
    const { runId } = await seedRun({ runs })
    const h = host(runs, runId, () => paced([]))
    await expect(h.run()).rejects.toMatchObject({ reason: 'superseded' })
    expect(h.lines.join('\n')).toMatch(/did not round-trip driverEpoch/)
  })

  it('pipe called outside its claim throws RunDriverPipeOutsideClaimError and drives nothing', async () => {
    const { runs, runId } = await seedRun()
    let pulled = 0
    const { driver } = host(runs, runId, () => paced([]))
    const stream = (async function* () {
      pulled++
      yield* paced([])
    })()
    const error = await driver.pipe(stream, { runId, threadId, signal: new AbortController().signal }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RunDriverPipeOutsideClaimError)
    expect(error).toMatchObject({ reason: 'pipe-outside-claim', runId })
    expect(pulled).toBe(0)
    expect(await stored(runId)).toHaveLength(3)
  })

  it('rejects bad options naming the field', () => {
    const good = { request: request('r'), runs: new InMemoryRunStore(), locks: new InMemoryLockStore(), durability: () => memoryStream({ runId: 'r' }), drive: () => paced([]) }
    expect(() => sandboxRunDriver({ ...good, fenceQuietMs: -1 })).toThrow(/sandboxRunDriver\.fenceQuietMs/)
    // Above a Node timer's limit, setTimeout would fire after 1 ms and turn the quiescence wait off.
    expect(() => sandboxRunDriver({ ...good, fenceQuietMs: 2 ** 31 })).toThrow(/sandboxRunDriver\.fenceQuietMs.*at most 2147483647 ms/)
    expect(() => sandboxRunDriver({ ...good, locks: {} as never })).toThrow(SandboxConfigError)
    expect(() => sandboxRunDriver({ ...good, durability: memoryStream({ runId: 'r' }) as never })).toThrow(/sandboxRunDriver\.durability: expected a per-run factory/)
  })
})

describe('sandboxRunDriver: the fences', () => {
  it('a superseded driver: its append is refused, its terminal update suppressed, its close() still runs', async () => {
    // Two hosts, each with its OWN InMemoryLockStore: the lock cannot coordinate, only the epoch can.
    const { runs, runId, chunks } = await seedRun({ prefix: 0 })
    const gate = deferred()
    const closes = { a: 0 }
    const logA = (): StreamDurability => {
      const inner = memoryStream({ runId })
      return { ...inner, close: async () => void closes.a++ }
    }
    const a = host(runs, runId, () => paced(chunks.slice(0, 4), 0, { at: 2, wait: gate.promise }), { durability: logA })
    const aDone = a.run().catch((e: unknown) => e)
    await until(async () => (await stored(runId)).length >= 1)
    const b = host(runs, runId, () => paced(chunks.slice(2), 0))
    const bDone = b.run()
    await until(async () => (await runs.get(runId))?.driverEpoch === 2)
    gate.resolve()
    const aError = await aDone
    await bDone
    expect(aError).toBeInstanceOf(RunClaimLostError)
    expect(aError).toMatchObject({ heldEpoch: 1, runId })
    // A stored its first two chunks before B claimed; B appended the rest after quiescence. Nothing doubled, no RUN_ERROR from A.
    expect(await stored(runId)).toEqual(chunks)
    expect(closes.a).toBe(1)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 2 })
  })

  it('a superseded driver whose stream reached its end: the append of its terminal chunk is refused, and it writes no terminal status', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 0 })
    const landed = deferred()
    let appendCalls = 0
    // Host A's first append is slow to land (a paused host); by the time it does, B has claimed the run.
    const logA = (): StreamDurability => {
      const inner = memoryStream({ runId })
      return { ...inner, append: async (c) => (++appendCalls === 1 ? await landed.promise : undefined, inner.append(c)) }
    }
    const a = host(runs, runId, () => paced([...chunks.slice(0, 3), chunks.at(-1)!]), { durability: logA })
    const aDone = a.run().catch((e: unknown) => e)
    await until(() => appendCalls === 1)
    const b = host(runs, runId, () => paced(chunks.slice(1)), { fenceQuietMs: 100 })
    const bDone = b.run()
    await until(async () => (await runs.get(runId))?.driverEpoch === 2)
    landed.resolve()
    expect(await aDone).toBeInstanceOf(RunClaimLostError)
    await bDone
    // The terminal chunk's append is awaited before the stream is read on, so A sees the refusal as a lost claim (not an end).
    expect(a.lines.join('\n')).toMatch(/the append was refused by the epoch fence/)
    expect(await stored(runId)).toEqual(chunks)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 2 })
  })

  it("a cancel seen by a driver that lost its lease: its 'aborted' is suppressed, close() still runs", async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 0 })
    const locks = new RevocableLockStore()
    const gate = deferred()
    let closes = 0
    const log = (): StreamDurability => {
      const inner = memoryStream({ runId })
      return { ...inner, close: async () => void closes++ }
    }
    const a = host(runs, runId, () => paced(chunks, 0, { at: 2, wait: gate.promise }), { locks, durability: log })
    const done = a.run().catch((e: unknown) => e)
    await until(async () => (await stored(runId)).length === 2)
    await requestRunCancel(runs, runId)
    locks.revoke(runDriverLockKey(runId))
    expect(await done).toBeInstanceOf(RunClaimLostError)
    gate.resolve()
    expect(a.lines.join('\n')).toMatch(/suppressed the terminal status aborted/)
    expect(closes).toBe(1)
    // No RUN_ERROR from the lost driver either: the record and the log are left to the run's current driver.
    expect(await stored(runId)).toEqual(chunks.slice(0, 2))
    expect(await runs.get(runId)).toMatchObject({ status: 'running', cancelRequested: true })
  })

  it('the first refusal latches the fence: later appends are refused even if the epoch reads right again', async () => {
    const { runs: inner, runId, chunks } = await seedRun({ prefix: 0 })
    let staleReads = 0
    const runs: RunStore = {
      ...bind(inner),
      // One read of driverEpoch reports a successor's epoch, then the store reads right again.
      get: async (id) => {
        const record = await inner.get(id)
        if (record && staleReads === 1) {
          staleReads++
          return { ...record, driverEpoch: 99 }
        }
        return record
      },
    }
    const gate = deferred()
    const appends: StreamChunk[][] = []
    const log = (): StreamDurability => {
      const m = memoryStream({ runId })
      return { ...m, append: (c) => (appends.push(c), m.append(c)) }
    }
    const a = host(runs, runId, () => paced(chunks, 0, { at: 1, wait: gate.promise }), { durability: log })
    const done = a.run().catch((e: unknown) => e)
    await until(() => appends.length === 1)
    // A cancel makes the driver try a terminal RUN_ERROR append after the refusal: only the latch stops it.
    await requestRunCancel(inner, runId)
    staleReads = 1
    gate.resolve()
    expect(await done).toBeInstanceOf(RunClaimLostError)
    expect(staleReads).toBe(2)
    // Only the first chunk landed: the refused batch and the RUN_ERROR after it (epoch reading 1 again) never reached the log,
    // and the 'aborted' status was suppressed.
    expect(appends).toEqual([[chunks[0]]])
    const record = await inner.get(runId)
    expect(record?.status).toBe('running')
    expect(a.lines.join('\n')).toMatch(/suppressed the terminal status aborted/)
    expect(record?.driverEpoch).toBe(1)
  })

  it('a lost lease aborts the drive, rejects with RunClaimLostError, leaves the run running for a successor', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 0 })
    const locks = new RevocableLockStore()
    const gate = deferred()
    let signal: AbortSignal | undefined
    const a = host(runs, runId, (input) => ((signal = input.signal), paced(chunks, 0, { at: 3, wait: gate.promise })), { locks })
    const done = a.run().catch((e: unknown) => e)
    await until(async () => (await stored(runId)).length === 3)
    locks.revoke(runDriverLockKey(runId))
    expect(signal?.aborted).toBe(true)
    const error = await done
    expect(error).toBeInstanceOf(RunClaimLostError)
    expect(error).toMatchObject({ heldEpoch: 1, reason: 'claim-lost' })
    gate.resolve()
    expect(await runs.get(runId)).toMatchObject({ status: 'running', driverEpoch: 1 })
    // The successor claims the freed lease at epoch 2 and finishes the run from where the log stopped.
    const b = host(runs, runId, () => paced(chunks.slice(3)), { locks })
    await b.run()
    expect(await stored(runId)).toEqual(chunks)
    expect(await runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: 2 })
  })

  it('quiescence: the successor waits for a still-growing log before its first append', async () => {
    const { runs, runId, chunks } = await seedRun({ prefix: 0, words: ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10'] })
    const predecessor = memoryStream({ runId })
    const cut = 9
    // The predecessor is still landing its last batches, one every 30 ms, when the successor claims.
    const landing = (async () => {
      for (const chunk of chunks.slice(0, cut)) {
        await predecessor.append([chunk])
        await new Promise((r) => setTimeout(r, 30))
      }
    })()
    let startedAt = 0
    const b = host(runs, runId, () => ((startedAt = Date.now()), paced(chunks.slice(cut))), { fenceQuietMs: 150 })
    await new Promise((r) => setTimeout(r, 10))
    await b.run()
    await landing
    expect(startedAt).toBeGreaterThan(0)
    expect(await stored(runId)).toEqual(chunks)
  })
})

/** The methods of a class-based store as an object (so one can be overridden). */
function bind(store: RunStore): RunStore {
  return {
    createOrResume: (input) => store.createOrResume(input),
    update: (id, patch) => store.update(id, patch),
    get: (id) => store.get(id),
    findActiveRun: (t) => store.findActiveRun(t),
  }
}
