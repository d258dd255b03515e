// The PostgreSQL RunStore: every method core declares, the key-presence patch
// rule, the same answers as core's InMemoryRunStore for one sequence of calls,
// the engine-enforced fence (updateAtEpoch), a corrupt row refused, and calls
// after close.
import { InMemoryRunStore, type RunRecord, type RunStore } from '@tanstack/ai'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { expect, it } from 'vitest'
import { PostgresDatabaseError } from '../src/index.js'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

/** A record as plain data: keys whose value is undefined dropped (the in-memory store keeps them after a clear). */
function plain(record: RunRecord | null): unknown {
  return record === null ? null : JSON.parse(JSON.stringify(record))
}

describePostgres('postgresRunStore', (url) => {
  const schemas = tempSchemas(url)

  it('createOrResume creates a running record once and returns the stored one unchanged after', async () => {
    const { runs } = await schemas.open()
    const created = await runs.createOrResume({ runId: 'r1', threadId: 't1', startedAt: 1000 })
    expect(created).toEqual({ runId: 'r1', threadId: 't1', status: 'running', startedAt: 1000 })
    const again = await runs.createOrResume({ runId: 'r1', threadId: 'other', startedAt: 5, status: 'completed' })
    expect(again).toEqual(created)
    expect(await runs.createOrResume({ runId: 'r2', threadId: 't1', startedAt: 1, status: 'interrupted' })).toMatchObject({ status: 'interrupted' })
    expect(await runs.get('missing')).toBeNull()
  })

  it('round-trips every patchable field, JSON error and usage included', async () => {
    const { runs } = await schemas.open()
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
    const { runs } = await schemas.open()
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
    const { runs } = await schemas.open()
    await expect(runs.update('ghost', { status: 'completed', driverEpoch: 1 })).resolves.toBeUndefined()
    expect(await runs.get('ghost')).toBeNull()
    expect(await runs.listByThread('')).toEqual([])
  })

  it('updateAtEpoch applies only while the stored driverEpoch is the writer\'s (unset for undefined), with the key-presence rule', async () => {
    const { runs } = await schemas.open()
    expect(await runs.updateAtEpoch('ghost', undefined, { status: 'completed' })).toBe(false)
    await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    expect(await runs.updateAtEpoch('r', 1, { sandboxKey: 'nope' })).toBe(false)
    expect(await runs.updateAtEpoch('r', undefined, { sandboxKey: 'k' })).toBe(true)
    await runs.update('r', { driverEpoch: 4 })
    expect(await runs.updateAtEpoch('r', undefined, { status: 'completed' })).toBe(false)
    expect(await runs.updateAtEpoch('r', 3, { status: 'completed' })).toBe(false)
    // An empty patch still answers whether the epoch holds.
    expect(await runs.updateAtEpoch('r', 4, {})).toBe(true)
    expect(await runs.updateAtEpoch('r', 5, { status: undefined })).toBe(false)
    expect(await runs.updateAtEpoch('r', 4, { status: 'completed', finishedAt: 9, sandboxKey: undefined })).toBe(true)
    expect(await runs.get('r')).toEqual({ runId: 'r', threadId: 't', status: 'completed', startedAt: 1, finishedAt: 9, driverEpoch: 4 })
  })

  it('findActiveRun, listByThread and listReclaimable answer as core InMemoryRunStore does', async () => {
    const pgRuns = (await schemas.open()).runs
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
    expect(await script(pgRuns)).toEqual(expected)
    // Spot-check the expectation itself, so a shared mistake cannot pass.
    expect(expected[0]).toMatchObject({ runId: 'b' })
    expect(expected[3]).toBeNull()
    expect(expected.slice(6, 10)).toEqual([[], ['e'], ['e', 'f'], ['e', 'f']])
  })

  it('two pools on one schema see each other at once', async () => {
    const schema = schemas.schema()
    const one = await schemas.open({ schema })
    const two = await schemas.open({ schema })
    await one.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    await two.runs.update('r', { driverEpoch: 7 })
    expect((await one.runs.get('r'))?.driverEpoch).toBe(7)
    expect((await two.runs.findActiveRun('t'))?.runId).toBe('r')
  })

  it('update refuses a status that is not a RunStatus, naming the field, and stores nothing', async () => {
    const stores = await schemas.open()
    await stores.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    const error = await stores.runs.update('r', { status: 'weird' as never }).catch((e: unknown) => e)
    expect(SandboxConfigError.isInstance(error) && error.field).toBe('update.status')
    expect(await stores.runs.updateAtEpoch('r', undefined, { status: 'weird' as never }).catch((e: unknown) => e)).toBeInstanceOf(SandboxConfigError)
    expect((await stores.runs.get('r'))?.status).toBe('running')
  })

  it('refuses a row whose status is not a RunStatus, and every call after close', async () => {
    const stores = await schemas.open()
    await stores.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    await stores.pool.query(`UPDATE "${stores.schema}".runs SET status = 'toString' WHERE run_id = 'r'`)
    const error = await stores.runs.get('r').catch((e: unknown) => e)
    expect(PostgresDatabaseError.isInstance(error) && error.reason).toBe('corrupt-row')
    await stores.close()
    const closed = await stores.runs.get('r').catch((e: unknown) => e)
    expect(PostgresDatabaseError.isInstance(closed) && closed.reason).toBe('closed')
  })
})
