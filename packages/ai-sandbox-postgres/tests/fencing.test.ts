// The airtight fencing proof, with real OS processes and a real PostgreSQL:
// process A claims a run (bumps driverEpoch to N under the lock, as the
// driver's claim does) and appends in a loop through stream.atEpoch(N),
// ignoring its lease signal (a process that has not noticed it lost). The
// test pauses A with SIGSTOP past its lease; process B takes the lock, bumps
// driverEpoch to N+1 and appends through atEpoch(N+1); then A is resumed with
// SIGCONT. The database must refuse A: its next append rejects with
// StaleEpochError, its updateAtEpoch(N, completed) returns false, the log
// holds no duplicated chunk, its offsets are gap-free, and every chunk after
// B's first one is B's. FENCE_TRIALS trials in one test (CI and default 10;
// `pnpm soak` runs 50), the tally printed. Where the pause lands is drawn
// from a printed seed; FENCE_SEED replays it.
import { randomInt } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { childProcesses, type ChildEvent } from '@testing/support/store-suites/children'
import { expect, it } from 'vitest'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

const TRIALS = Number(process.env.FENCE_TRIALS ?? 10)
const SEED = Number(process.env.FENCE_SEED ?? randomInt(2 ** 30))
console.info(`[fencing] seed ${SEED}: FENCE_SEED=${SEED} replays where each pause lands (FENCE_TRIALS=${TRIALS})`)

/** mulberry32: a small seeded generator, so a printed seed draws the same pauses again. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), a | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
const LEASE_MS = 400

describePostgres('epoch fencing across processes', (url) => {
  const schemas = tempSchemas(url)
  const { start } = childProcesses(fileURLToPath(new URL('./fixtures/store-child.ts', import.meta.url)))

  it(`a stalled driver resumed after a takeover can write nothing: ${TRIALS} trials`, async () => {
    const stores = await schemas.open()
    const schema = stores.schema
    const a = start({ role: 'worker', url, schema, leaseMs: LEASE_MS })
    const b = start({ role: 'worker', url, schema, leaseMs: LEASE_MS })
    await Promise.all([a.next('ready'), b.next('ready')])
    const tally = { trials: 0, staleRefusals: 0, settleRefused: 0, duplicates: 0, gaps: 0, foreignAfterSuccessor: 0, resumedAppendStoredBeforeTakeover: 0, resumedAppendEndedByServer: 0, chunks: 0 }
    const random = seededRandom(SEED)
    const since = (events: ChildEvent[], from: number, name: string): ChildEvent[] => events.slice(from).filter((e) => e.event === name)

    for (let trial = 0; trial < TRIALS; trial++) {
      const runId = `fence-${trial}`
      await stores.runs.createOrResume({ runId, threadId: 'thread', startedAt: Date.now() })
      const [a0, b0] = [a.events.length, b.events.length]
      a.send({ op: 'drive', runId, key: `driver:${runId}` })
      const claimedA = await a.next('claimed', a0)
      await a.next('appended', a0)
      // Vary where the pause lands: between appends, or inside one (A then holds row locks while stopped).
      await new Promise((resolve) => setTimeout(resolve, random() * 20))
      a.process.kill('SIGSTOP')
      const stoppedAt = a.events.length
      b.send({ op: 'drive', runId, key: `driver:${runId}`, appends: 5 })
      const t0 = Date.now()
      const claimedB = await b.next('claimed', b0)
      const t1 = Date.now()
      const firstB = await b.next('appended', b0)
      a.process.kill('SIGCONT')
      const t2 = Date.now()
      const settledA = await a.next('settled', a0)
      const t3 = Date.now()
      const settledB = await b.next('settled', b0)
      if (process.env.FENCE_DEBUG) console.log(trial, 'claimB', t1 - t0, 'firstB', t2 - t1, 'settleA', t3 - t2, 'settleB', Date.now() - t3, JSON.stringify(a.events.slice(a0).map((e) => e.event + ':' + (e.at - t0))))
      await Promise.all([a.next('done', a0), b.next('done', b0)])

      expect(claimedB.epoch, `trial ${trial} (seed ${SEED}): B's claim bumped the epoch past A's`).toBe((claimedA.epoch as number) + 1)
      const refused = since(a.events, a0, 'refused')
      expect(refused, `trial ${trial} (seed ${SEED}): A's append after the takeover was refused with StaleEpochError`).toHaveLength(1)
      expect(refused[0]!.storedEpoch).toBe(claimedB.epoch)
      if (refused.length === 1) tally.staleRefusals++
      expect(settledA.applied, `trial ${trial} (seed ${SEED}): A's updateAtEpoch(N, completed) was refused`).toBe(false)
      if (settledA.applied === false) tally.settleRefused++
      expect(settledB.applied, `trial ${trial} (seed ${SEED}): B settled the run`).toBe(true)

      // What A did once resumed: at most the append that was in flight at the pause, stored before B's claim, or ended by the server.
      const resumedAppends = since(a.events, stoppedAt, 'appended')
      tally.resumedAppendStoredBeforeTakeover += resumedAppends.length
      tally.resumedAppendEndedByServer += since(a.events, stoppedAt, 'append-failed').length
      for (const e of resumedAppends) expect(Number(e.offset), `trial ${trial} (seed ${SEED}): an append of A that landed after the pause precedes B's first`).toBeLessThan(Number(firstB.offset))

      const log = await stores.stream({ runId }).snapshot()
      const deltas = log.map((entry) => (entry.chunk as { delta: string }).delta)
      const duplicates = deltas.length - new Set(deltas).size
      const gaps = log.filter((entry, index) => entry.offset !== String(index)).length
      const after = log.filter((entry) => Number(entry.offset) >= Number(firstB.offset))
      const foreign = after.filter((entry) => !(entry.chunk as { delta: string }).delta.startsWith(`${b.process.pid}:${claimedB.epoch}:`)).length
      tally.duplicates += duplicates
      tally.gaps += gaps
      tally.foreignAfterSuccessor += foreign
      tally.chunks += log.length
      tally.trials++
      expect({ duplicates, gaps, foreign }, `trial ${trial} (seed ${SEED}): the log ${JSON.stringify(deltas)}`).toEqual({ duplicates: 0, gaps: 0, foreign: 0 })
      expect(after, `trial ${trial} (seed ${SEED}): B's 5 chunks follow its first`).toHaveLength(5)
      expect(await stores.runs.get(runId)).toMatchObject({ status: 'completed', driverEpoch: claimedB.epoch })
    }
    console.log(`epoch fencing tally: ${JSON.stringify(tally)}`)
    expect(tally, `seed ${SEED}`).toMatchObject({ trials: TRIALS, staleRefusals: TRIALS, settleRefused: TRIALS, duplicates: 0, gaps: 0, foreignAfterSuccessor: 0 })
    a.send({ op: 'exit' })
    b.send({ op: 'exit' })
    expect(await a.exited).toBe(0)
    expect(await b.exited).toBe(0)
  }, 180_000)
})
