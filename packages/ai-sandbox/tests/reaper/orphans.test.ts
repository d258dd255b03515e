/**
 * Orphans in `reapDetachedRuns` (issue 28, "a crash nobody returns to"): a
 * run still running, never detached, past the grace and with no holder of
 * its driver lease is marked detached at the sweep's clock and then swept
 * like any detached run (here: expired with TTL 0); one whose lease is held,
 * one inside the grace, and one whose epoch moved meanwhile are left alone;
 * `orphanGraceMs` with stores that cannot look for orphans is refused. Over
 * in-memory stores given the two optional methods, as a BYO store would.
 */
import { InMemoryRunStore, memoryStream, type RunRecord, type RunStore } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { reapDetachedRuns, SandboxConfigError, type UndetachedRunLister } from '../../src/index.js'
import { capturingLogger } from './helpers.js'
import { probingLockStore } from '../helpers/probing-locks.js'

/** An in-memory run store with `listUndetachedRuns`, and a write hook to move an epoch between the look and the write. */
function runStore(): RunStore & UndetachedRunLister & { ids: string[] } {
  const inner = new InMemoryRunStore()
  const ids: string[] = []
  return {
    ids,
    createOrResume: async (input) => {
      ids.push(input.runId)
      return inner.createOrResume(input)
    },
    update: (runId, patch) => inner.update(runId, patch),
    get: (runId) => inner.get(runId),
    findActiveRun: (threadId) => inner.findActiveRun(threadId),
    listReclaimable: (options) => inner.listReclaimable(options),
    listUndetachedRuns: async ({ startedBefore, limit }) => {
      const records = (await Promise.all(ids.map((id) => inner.get(id)))).filter((r): r is RunRecord => r !== null)
      return records.filter((r) => r.status === 'running' && r.detachedSince === undefined && r.startedAt <= startedBefore).sort((a, b) => a.startedAt - b.startedAt).slice(0, limit)
    },
  }
}

const never = (): never => {
  throw new Error('no drive: the sweep must expire, not finalize, these runs')
}

describe('reapDetachedRuns: orphans', () => {
  it('marks a long-running, never-detached run with no lease holder detached and expires it; leaves runs whose lease is held or that are inside the grace', async () => {
    const runs = runStore()
    const locks = probingLockStore()
    const now = Date.now()
    const thread = () => `thread-${randomUUID()}`
    const orphan = `orphan-${randomUUID()}`
    const live = `live-${randomUUID()}`
    const young = `young-${randomUUID()}`
    await runs.createOrResume({ runId: orphan, threadId: thread(), startedAt: now - 120_000 })
    await runs.createOrResume({ runId: live, threadId: thread(), startedAt: now - 120_000 })
    await runs.createOrResume({ runId: young, threadId: thread(), startedAt: now - 1_000 })
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const holding = locks.withLock(`tanstack-ai-sandbox:run-driver:${live}`, () => released)
    const { logger, warnings } = capturingLogger()
    const result = await reapDetachedRuns({ runs, locks, durability: (runId) => memoryStream({ runId }), hasFinished: async () => ({ state: 'producing' }), drive: never, now, detachedRunTtlMs: 0, fenceQuietMs: 0, logger })
    release()
    await holding
    expect(result.orphans).toEqual([orphan])
    expect(result.entries.map((e) => [e.runId, e.outcome])).toEqual([[orphan, 'expired']])
    expect(await runs.get(orphan)).toMatchObject({ status: 'failed', detachedSince: now, error: { code: 'detached-run-expired' } })
    expect(await runs.get(live), 'a run whose driver holds its lease is live').toMatchObject({ status: 'running' })
    expect((await runs.get(live))?.detachedSince).toBeUndefined()
    expect((await runs.get(young))?.detachedSince, 'a run inside the 60 s grace is not looked at').toBeUndefined()
    expect(warnings.join('\n')).toMatch(/no host holds its driver lease and nobody detached it/)
  })

  it('a run a host claims between the look and the write (its epoch moved) is not marked', async () => {
    const inner = runStore()
    const runId = `claimed-${randomUUID()}`
    await inner.createOrResume({ runId, threadId: `thread-${randomUUID()}`, startedAt: Date.now() - 120_000 })
    // The store's conditional write, as SQLite and PostgreSQL do it; a claim lands just before it.
    const runs = Object.assign(inner, {
      updateAtEpoch: async (id: string, epoch: number | undefined, patch: Parameters<RunStore['update']>[1]) => {
        await inner.update(id, { driverEpoch: 1 })
        if ((await inner.get(id))?.driverEpoch !== epoch) return false
        await inner.update(id, patch)
        return true
      },
    })
    const result = await reapDetachedRuns({ runs, locks: probingLockStore(), durability: (id) => memoryStream({ runId: id }), hasFinished: async () => ({ state: 'producing' }), drive: never, now: Date.now(), detachedRunTtlMs: 0, orphanGraceMs: 0 })
    expect(result.orphans).toEqual([])
    expect((await runs.get(runId))?.detachedSince).toBeUndefined()
  })

  it('orphanGraceMs with stores that cannot look for orphans is refused, naming the missing method', () => {
    const base = { durability: (runId: string) => memoryStream({ runId }), hasFinished: async () => ({ state: 'unknown' as const }), drive: never, now: Date.now(), detachedRunTtlMs: 0, orphanGraceMs: 1000 }
    expect(() => reapDetachedRuns({ ...base, runs: new InMemoryRunStore(), locks: probingLockStore() })).toThrow(SandboxConfigError)
    expect(() => reapDetachedRuns({ ...base, runs: new InMemoryRunStore(), locks: probingLockStore() })).toThrow(/runs\.listUndetachedRuns/)
    expect(() => reapDetachedRuns({ ...base, runs: runStore(), locks: new InMemoryLockStore() })).toThrow(/locks\.isHeld/)
  })
})
