/**
 * The RunStore cases a store package shares: every method core declares, the
 * key-presence patch rule, the same answers as core's InMemoryRunStore for one
 * sequence of calls, two store sets on one place seeing each other at once, a
 * status that is not a RunStatus refused on write and on read, and every call
 * after close refused. The package's own cases join the same describe block.
 */
import { InMemoryRunStore, type RunRecord, type RunStore } from '@tanstack/ai'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { expect, it } from 'vitest'
import type { StorePlaces, StoreTarget, SuiteStores } from './target.js'

/** What the run store suite needs from the package beyond its target. */
export interface RunStoreSuiteHooks<S extends SuiteStores, P extends StorePlaces<S>> {
  /** Write `status` over the stored status of `runId` behind the store's back (a row no version of the package writes). */
  corruptStatus(stores: S, runId: string, status: string): void | Promise<void>
  /** Register the package's own cases in the same describe block. */
  own?(places: P): void
}

/** A record as plain data: keys whose value is undefined dropped (the in-memory store keeps them after a clear). */
function plain(record: RunRecord | null): unknown {
  return record === null ? null : JSON.parse(JSON.stringify(record))
}

/** Register the run store cases (see the module header) as the describe block `<prefix>RunStore`. */
export function runRunStoreSuite<S extends SuiteStores, P extends StorePlaces<S>>(target: StoreTarget<S, P>, hooks: RunStoreSuiteHooks<S, P>): void {
  target.describe(`${target.prefix}RunStore`, (places) => {
    it('createOrResume creates a running record once and returns the stored one unchanged after', async () => {
      const { runs } = await places.open()
      const created = await runs.createOrResume({ runId: 'r1', threadId: 't1', startedAt: 1000 })
      expect(created).toEqual({ runId: 'r1', threadId: 't1', status: 'running', startedAt: 1000 })
      const again = await runs.createOrResume({ runId: 'r1', threadId: 'other', startedAt: 5, status: 'completed' })
      expect(again).toEqual(created)
      expect(await runs.createOrResume({ runId: 'r2', threadId: 't1', startedAt: 1, status: 'interrupted' })).toMatchObject({ status: 'interrupted' })
      expect(await runs.get('missing')).toBeNull()
    })

    it('round-trips every patchable field, JSON error and usage included', async () => {
      const { runs } = await places.open()
      await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 10 })
      const patch = {
        status: 'failed' as const,
        finishedAt: 1_780_000_000_123,
        error: { message: 'boom', code: 'provider_error' },
        usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
        sandboxKey: 'sbx:key',
        detachedSince: 15.5,
        cancelRequested: false,
        driverEpoch: 3,
      }
      await runs.update('r', patch)
      expect(await runs.get('r')).toEqual({ runId: 'r', threadId: 't', startedAt: 10, ...patch })
      await runs.update('r', { cancelRequested: true })
      expect((await runs.get('r'))?.cancelRequested).toBe(true)
    })

    it('update applies present keys only: omitted keys are untouched, explicit undefined clears', async () => {
      const { runs } = await places.open()
      await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 10 })
      await runs.update('r', { sandboxKey: 'k', detachedSince: 5, driverEpoch: 1, error: { message: 'x' } })
      await runs.update('r', { driverEpoch: 2 })
      expect(await runs.get('r')).toEqual({ runId: 'r', threadId: 't', status: 'running', startedAt: 10, sandboxKey: 'k', detachedSince: 5, driverEpoch: 2, error: { message: 'x' } })
      await runs.update('r', { detachedSince: undefined, error: undefined })
      const record = await runs.get('r')
      expect(record).toEqual({ runId: 'r', threadId: 't', status: 'running', startedAt: 10, sandboxKey: 'k', driverEpoch: 2 })
      expect(Object.hasOwn(record!, 'detachedSince')).toBe(false)
      await runs.update('r', { status: undefined })
      expect((await runs.get('r'))?.status).toBe('running')
    })

    it('update of an unknown run is a no-op that creates nothing', async () => {
      const { runs } = await places.open()
      await expect(runs.update('ghost', { status: 'completed', driverEpoch: 1 })).resolves.toBeUndefined()
      expect(await runs.get('ghost')).toBeNull()
      expect(await runs.listByThread('')).toEqual([])
    })

    it('findActiveRun, listByThread and listReclaimable answer as core InMemoryRunStore does', async () => {
      const stored = (await places.open()).runs
      const memory = new InMemoryRunStore()
      const script = async (runs: RunStore): Promise<unknown[]> => {
        const out: unknown[] = []
        await runs.createOrResume({ runId: 'a', threadId: 't', startedAt: 100 })
        await runs.createOrResume({ runId: 'b', threadId: 't', startedAt: 300 })
        await runs.createOrResume({ runId: 'c', threadId: 't', startedAt: 300 }) // ties with b: the first stored wins
        await runs.createOrResume({ runId: 'd', threadId: 't', startedAt: 50, status: 'interrupted' })
        await runs.createOrResume({ runId: 'e', threadId: 'u', startedAt: 999 })
        out.push(plain(await runs.findActiveRun('t')))
        await runs.update('b', { status: 'completed', finishedAt: 400 })
        out.push(plain(await runs.findActiveRun('t')))
        await runs.update('c', { status: 'aborted' })
        out.push(plain(await runs.findActiveRun('t')))
        await runs.update('a', { status: 'failed' })
        out.push(plain(await runs.findActiveRun('t')), plain(await runs.findActiveRun('nobody')))
        out.push((await runs.listByThread!('t')).map(plain))
        await runs.update('e', { detachedSince: 1000 })
        await runs.createOrResume({ runId: 'f', threadId: 'u', startedAt: 1 })
        await runs.update('f', { detachedSince: 1001 })
        await runs.createOrResume({ runId: 'g', threadId: 'u', startedAt: 2 })
        await runs.update('g', { detachedSince: 500, status: 'completed' })
        for (const now of [1999, 2000, 2001, 5000]) out.push((await runs.listReclaimable!({ now, ttlMs: 1000 })).map((r) => r.runId))
        await runs.update('e', { detachedSince: undefined })
        out.push((await runs.listReclaimable!({ now: 5000, ttlMs: 0 })).map((r) => r.runId))
        return out
      }
      const expected = await script(memory)
      expect(await script(stored)).toEqual(expected)
      // Spot-check the expectation itself, so a shared mistake cannot pass.
      expect(expected[0]).toMatchObject({ runId: 'b' })
      expect(expected[3]).toBeNull()
      expect(expected.slice(6, 10)).toEqual([[], ['e'], ['e', 'f'], ['e', 'f']])
    })

    it(`${target.words.peers} see each other at once`, async () => {
      const place = places.place()
      const one = await places.open({ place })
      const two = await places.open({ place })
      await one.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
      await two.runs.update('r', { driverEpoch: 7 })
      expect((await one.runs.get('r'))?.driverEpoch).toBe(7)
      expect((await two.runs.findActiveRun('t'))?.runId).toBe('r')
    })

    it('update refuses a status that is not a RunStatus, naming the field, and stores nothing', async () => {
      const stores = await places.open()
      await stores.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
      const error = await stores.runs.update('r', { status: 'weird' as never }).catch((e: unknown) => e)
      expect(SandboxConfigError.isInstance(error) && error.field).toBe('update.status')
      expect(await stores.runs.updateAtEpoch('r', undefined, { status: 'weird' as never }).catch((e: unknown) => e)).toBeInstanceOf(SandboxConfigError)
      expect((await stores.runs.get('r'))?.status).toBe('running')
    })

    it('refuses a row whose status is not a RunStatus, and every call after close', async () => {
      const stores = await places.open()
      await stores.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
      await hooks.corruptStatus(stores, 'r', 'toString')
      const error = await stores.runs.get('r').catch((e: unknown) => e)
      expect(target.errors.database.isInstance(error) && error.reason).toBe('corrupt-row')
      await stores.close()
      const closed = await stores.runs.get('r').catch((e: unknown) => e)
      expect(target.errors.database.isInstance(closed) && closed.reason).toBe('closed')
    })

    hooks.own?.(places)
  })
}
