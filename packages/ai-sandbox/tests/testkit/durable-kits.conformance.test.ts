// The two durable-run kits against core's in-memory stores (InMemoryRunStore, InMemoryLockStore,
// memoryStream), and proof that each kit fails a deliberately broken store through its check
// functions: a store that treats `undefined` as "leave alone", one that drops `driverEpoch`, a
// lock that does not exclude, a log factory that does not resolve one log per run, and others.
import { InMemoryRunStore, memoryStream, type RunRecord, type RunStore, type StreamDurability } from '@tanstack/ai'
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { SandboxConfigError } from '../../src/index.js'
import {
  checkRunCreate,
  checkRunFieldsRoundTrip,
  checkRunFindActiveRun,
  checkRunGetUnknown,
  checkRunListByThread,
  checkRunListReclaimable,
  checkRunListUndetachedRuns,
  checkRunListEndedRuns,
  checkRunPatchOmittedKeyKeeps,
  checkRunPatchUndefinedClears,
  checkRunResume,
  checkRunUpdateUnknown,
  checkTakeoverSingleWriter,
  checkTakeoverSupersededAppendRefused,
  DURABLE_RUN_FIELDS_CHECKS,
  runDurableRunFieldsConformance,
  runTakeoverConformance,
  TAKEOVER_CHECKS,
  type TakeoverStores,
} from '../../src/testkit/index.js'
import { failureOf } from '../helpers/kit-failure.js'

/** The four required methods of a store, as a plain object (so one can be overridden and the optional ones left out). */
function required(store: RunStore): RunStore {
  return {
    createOrResume: (input) => store.createOrResume(input),
    update: (runId, patch) => store.update(runId, patch),
    get: (runId) => store.get(runId),
    findActiveRun: (threadId) => store.findActiveRun(threadId),
  }
}

/** `store` with `listByThread` and `listReclaimable` too. */
function complete(store: InMemoryRunStore): RunStore {
  return { ...required(store), listByThread: (t) => store.listByThread(t), listReclaimable: (o) => store.listReclaimable(o) }
}

// The kits over core's in-memory stores.
runDurableRunFieldsConformance('core InMemoryRunStore', () => new InMemoryRunStore())
// A store with only the required methods: the listByThread / listReclaimable tests are skipped, naming the method.
runDurableRunFieldsConformance('a RunStore without the optional methods', () => required(new InMemoryRunStore()))

const runs = new InMemoryRunStore()
const locks = new InMemoryLockStore()
runTakeoverConformance('core InMemoryRunStore + InMemoryLockStore + memoryStream', { makeStores: () => ({ runs, locks, log: (runId) => memoryStream({ runId }) }) })

const memoryStores = (): TakeoverStores => ({ runs: new InMemoryRunStore(), locks: new InMemoryLockStore(), log: (runId) => memoryStream({ runId }) })

describe('the kits register every check', () => {
  it('the tables list each exported check once', () => {
    expect(DURABLE_RUN_FIELDS_CHECKS.map(([, check]) => check)).toEqual([
      checkRunCreate,
      checkRunResume,
      checkRunGetUnknown,
      checkRunUpdateUnknown,
      checkRunFieldsRoundTrip,
      checkRunPatchOmittedKeyKeeps,
      checkRunPatchUndefinedClears,
      checkRunFindActiveRun,
      checkRunListByThread,
      checkRunListReclaimable,
      checkRunListUndetachedRuns,
      checkRunListEndedRuns,
    ])
    expect(TAKEOVER_CHECKS).toHaveLength(5)
    expect(new Set(TAKEOVER_CHECKS.map(([title]) => title)).size).toBe(5)
  })

  it('runTakeoverConformance rejects bad options naming the field', () => {
    const makeStores = memoryStores
    expect(() => runTakeoverConformance('bad', { makeStores, fenceQuietMs: -1 })).toThrow(/runTakeoverConformance\.fenceQuietMs: expected 0 ms or more/)
    expect(() => runTakeoverConformance('bad', { makeStores, timeoutMs: 10 })).toThrow(/runTakeoverConformance\.timeoutMs/)
    expect(() => runTakeoverConformance('bad', { makeStores: memoryStores() as never })).toThrow(SandboxConfigError)
    expect(() => runTakeoverConformance('bad', { makeStores, fenceQuietMs: 10, extra: true } as never)).toThrow(/runTakeoverConformance\.extra/)
    expect(() => runDurableRunFieldsConformance('bad', new InMemoryRunStore() as never)).toThrow(/runDurableRunFieldsConformance\.makeStore: expected a function/)
  })
})

describe('the durable run fields kit catches a broken RunStore', () => {
  it('a store that treats an explicit undefined as "leave alone" fails checkRunPatchUndefinedClears', async () => {
    const inner = new InMemoryRunStore()
    const store: RunStore = { ...required(inner), update: (id, patch) => inner.update(id, Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined))) }
    expect(await failureOf(() => checkRunPatchUndefinedClears(store))).toMatch(/update\(\{ finishedAt: undefined \}\) clears finishedAt/)
    // The same store passes the rules it keeps: the failure is this rule's, not a general one.
    await checkRunPatchOmittedKeyKeeps(store)
    await checkRunFieldsRoundTrip(store)
  })

  it('a store that drops driverEpoch fails checkRunFieldsRoundTrip', async () => {
    const inner = new InMemoryRunStore()
    const store: RunStore = { ...required(inner), update: (id, { driverEpoch: _dropped, ...patch }) => inner.update(id, patch) }
    expect(await failureOf(() => checkRunFieldsRoundTrip(store))).toMatch(/round-trips|all eight fields/)
  })

  it('a store whose update of a missing run creates it (an upsert) fails checkRunUpdateUnknown', async () => {
    const inner = new InMemoryRunStore()
    const store: RunStore = {
      ...required(inner),
      update: async (id, patch) => {
        await inner.createOrResume({ runId: id, threadId: 'made-up', startedAt: 0 })
        await inner.update(id, patch)
      },
    }
    expect(await failureOf(() => checkRunUpdateUnknown(store))).toMatch(/must not create a record/)
  })

  it('a store whose createOrResume overwrites an existing run fails checkRunResume', async () => {
    const records = new Map<string, RunRecord>()
    const inner = new InMemoryRunStore()
    const store: RunStore = {
      ...required(inner),
      createOrResume: async (input) => {
        const record: RunRecord = { ...records.get(input.runId), runId: input.runId, threadId: input.threadId, startedAt: input.startedAt, status: input.status ?? 'running' }
        records.set(input.runId, record)
        return record
      },
      update: async (id, patch) => void (records.has(id) && records.set(id, { ...records.get(id)!, ...patch })),
      get: async (id) => records.get(id) ?? null,
    }
    expect(await failureOf(() => checkRunResume(store))).toMatch(/returns it unchanged/)
  })

  it('a store whose get of an unknown run resolves undefined fails checkRunGetUnknown', async () => {
    const inner = new InMemoryRunStore()
    const store: RunStore = { ...required(inner), get: async (id) => (await inner.get(id)) ?? (undefined as never) }
    expect(await failureOf(() => checkRunGetUnknown(store))).toMatch(/resolves to null/)
  })

  it('a store whose findActiveRun also returns terminal runs fails checkRunFindActiveRun', async () => {
    const inner = new InMemoryRunStore()
    const store: RunStore = { ...required(inner), findActiveRun: async (threadId) => (await inner.listByThread(threadId)).at(-1) ?? null }
    expect(await failureOf(() => checkRunFindActiveRun(store))).toMatch(/ignores terminal runs/)
  })

  it('a store whose findActiveRun returns the last created running run fails checkRunFindActiveRun', async () => {
    const inner = new InMemoryRunStore()
    const created: RunRecord[] = []
    const store: RunStore = {
      ...required(inner),
      createOrResume: async (input) => {
        const record = await inner.createOrResume(input)
        created.push(record)
        return record
      },
      findActiveRun: async (threadId) => {
        const running = await Promise.all(created.filter((r) => r.threadId === threadId).map((r) => inner.get(r.runId)))
        return running.filter((r) => r?.status === 'running').at(-1) ?? null
      },
    }
    expect(await failureOf(() => checkRunFindActiveRun(store))).toMatch(/greatest startedAt/)
  })

  it('a store whose listReclaimable cutoff is exclusive fails checkRunListReclaimable', async () => {
    const inner = new InMemoryRunStore()
    const store: RunStore = {
      ...complete(inner),
      listReclaimable: async ({ now, ttlMs }) => (await inner.listReclaimable({ now, ttlMs })).filter((r) => r.detachedSince! < now - ttlMs),
    }
    expect(await failureOf(() => checkRunListReclaimable(store))).toMatch(/detached exactly at now - ttlMs \(inclusive\) is reclaimable/)
  })

  it('a store whose listReclaimable ignores status fails checkRunListReclaimable', async () => {
    const inner = new InMemoryRunStore()
    const created = new Set<string>()
    const store: RunStore = {
      ...complete(inner),
      createOrResume: async (input) => (created.add(input.runId), inner.createOrResume(input)),
      listReclaimable: async ({ now, ttlMs }) => {
        const everyRun = await Promise.all([...created].map((id) => inner.get(id)))
        return everyRun.filter((r): r is RunRecord => r !== null && r.detachedSince !== undefined && r.detachedSince <= now - ttlMs)
      },
    }
    expect(await failureOf(() => checkRunListReclaimable(store))).toMatch(/completed with an old detachedSince is NOT reclaimable/)
  })

  it('a store whose listByThread returns creation order fails checkRunListByThread', async () => {
    const inner = new InMemoryRunStore()
    const order: string[] = []
    const store: RunStore = {
      ...complete(inner),
      createOrResume: async (input) => (order.push(input.runId), inner.createOrResume(input)),
      listByThread: async (threadId) => {
        const listed = await inner.listByThread(threadId)
        return [...listed].sort((a, b) => order.indexOf(a.runId) - order.indexOf(b.runId))
      },
    }
    expect(await failureOf(() => checkRunListByThread(store))).toMatch(/ascending by startedAt/)
  })

  it('a check of an optional method fails naming it on a store without it', async () => {
    expect(await failureOf(() => checkRunListByThread(required(new InMemoryRunStore())))).toMatch(/has no listByThread/)
    expect(await failureOf(() => checkRunListReclaimable(required(new InMemoryRunStore())))).toMatch(/has no listReclaimable/)
  })
})

describe('the takeover kit catches broken stores', () => {
  it('a RunStore that drops driverEpoch fails checkTakeoverSingleWriter: no claim can be confirmed, so nobody drives', async () => {
    const inner = new InMemoryRunStore()
    const stores: TakeoverStores = { ...memoryStores(), runs: { ...required(inner), update: (id, { driverEpoch: _dropped, ...patch }) => inner.update(id, patch) } }
    const message = await failureOf(() => checkTakeoverSingleWriter(stores))
    expect(message).toMatch(/seeding the run: the store must return the record/)
  })

  it('a LockStore that does not exclude fails checkTakeoverSingleWriter: both drivers drive', async () => {
    const notALock: LockStore = { withLock: (_key, fn) => fn(new AbortController().signal) }
    const stores: TakeoverStores = { ...memoryStores(), locks: notALock }
    const message = await failureOf(() => checkTakeoverSingleWriter(stores, { fenceQuietMs: 20 }))
    expect(message).toMatch(/exactly one drive may start.*drives per driver: 1, 1/)
  })

  it('a log factory that opens a new log per call fails checkTakeoverSupersededAppendRefused', async () => {
    const stores: TakeoverStores = { ...memoryStores(), log: (runId) => memoryStream({ runId: `${runId}:${randomUUID()}` }) }
    const message = await failureOf(() => checkTakeoverSupersededAppendRefused(stores, { fenceQuietMs: 20 }))
    expect(message).toMatch(/timed out .* waiting until driver 1 stored its first 3 chunks/)
  })

  it('a log that refuses appends after close() fails checkTakeoverSupersededAppendRefused: the successor cannot finish the run', async () => {
    const closed = new Set<string>()
    const log = (runId: string): StreamDurability => {
      const inner = memoryStream({ runId })
      return {
        ...inner,
        append: async (chunks) => {
          if (closed.has(runId)) throw new Error('this log is closed')
          return inner.append(chunks)
        },
        close: async () => {
          closed.add(runId)
          await inner.close()
        },
      }
    }
    const message = await failureOf(() => checkTakeoverSupersededAppendRefused({ ...memoryStores(), log }, { fenceQuietMs: 20 }))
    expect(message).toMatch(/every chunk once|driver 2 claims after driver 1/)
    expect(message).toMatch(/this log is closed/)
  })
})
