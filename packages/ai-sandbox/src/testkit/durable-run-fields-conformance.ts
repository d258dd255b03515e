/**
 * `runDurableRunFieldsConformance`: core's `RunStore` contract as a vitest
 * suite, with the eight patchable fields durable runs depend on and the
 * key-presence rule of `update`. Each check is also a plain function.
 * Source: `@tanstack/ai` 0.58.0 `RunStore` / `RunRecord`, spec 002. One file:
 * the checks share one store fixture and read in order.
 * Design notes: docs/design/testkit.md
 */
import type { RunRecord, RunStatus, RunStore, TokenUsage } from '@tanstack/ai'
import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import type { UndetachedRunLister } from '../reaper/orphans.js'
import type { EndedRunLister } from '../reaper/ended-runs.js'

const RUN = randomUUID().slice(0, 8)

/** An id unique to this run and this call, so checks never collide with real rows, each other, or an earlier run. */
function uniqueId(kind: 'run' | 'thread', name: string): string {
  return `conformance:${RUN}:${kind}:${name}:${randomUUID()}`
}

/** A `RunStore.update` patch. */
type RunPatch = Parameters<RunStore['update']>[1]

/** The seven optional fields a patch can set and clear (`status` is required on a record, so it is set, never cleared). */
const OPTIONAL_FIELDS = ['finishedAt', 'error', 'usage', 'sandboxKey', 'detachedSince', 'cancelRequested', 'driverEpoch'] as const satisfies ReadonlyArray<keyof RunPatch>

/** Epoch ms past 2^32 (as real timestamps are), with a millisecond part a column that drops it would lose. */
const STARTED_AT = 1_700_000_000_123

const USAGE: TokenUsage = { promptTokens: 120, completionTokens: 380, totalTokens: 500, promptTokensDetails: { cachedTokens: 40 } }

/** A patch setting all eight fields, none of them to a default-looking value. */
function fullPatch(): Required<RunPatch> {
  return {
    status: 'failed',
    finishedAt: STARTED_AT + 61_001,
    error: { message: 'the agent exited with status 3', code: 'agent-exit' },
    usage: USAGE,
    // A compound key embeds caller-chosen tenant and thread ids: colons, slashes and unicode are ordinary.
    sandboxKey: 'tenant/ä:thread:🔑:sandbox',
    detachedSince: STARTED_AT + 5_007,
    cancelRequested: true,
    driverEpoch: 3,
  }
}

/** A second value for each field, different from {@link fullPatch}'s. */
function otherPatch(): Required<RunPatch> {
  return {
    status: 'aborted',
    finishedAt: STARTED_AT + 99_999,
    error: { message: 'cancelled by the user' },
    usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 },
    sandboxKey: 'tenant-2:thread-2',
    detachedSince: STARTED_AT + 7_777,
    cancelRequested: false,
    driverEpoch: 4,
  }
}

/** Create a fresh `'running'` run on a fresh thread; returns its ids. */
async function freshRun(store: RunStore, name: string, threadId = uniqueId('thread', name)): Promise<{ runId: string; threadId: string }> {
  const runId = uniqueId('run', name)
  await store.createOrResume({ runId, threadId, startedAt: STARTED_AT })
  return { runId, threadId }
}

/** `get`, failing naming the rule when the record is gone. */
async function mustGet(store: RunStore, runId: string, rule: string): Promise<RunRecord> {
  const record = await store.get(runId)
  expect(record, `${rule}: get(runId) of a created run must return its record, not null`).not.toBeNull()
  return record!
}

/** Await `promise`; a rejection fails naming `rule` and carrying the store's error. */
async function mustResolve(promise: Promise<unknown>, rule: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e ?? new Error('rejected without a reason'),
  )
  if (error !== undefined) throw new Error(`Contract violated: ${rule}; it rejected with: ${String(error)}`, { cause: error })
}

/** The ids of `records`, in order, restricted to `ids` (a shared database may hold other rows). */
function idsAmong(records: ReadonlyArray<RunRecord>, ids: ReadonlyArray<string>): string[] {
  return records.map((r) => r.runId).filter((id) => ids.includes(id))
}

/**
 * `createOrResume` of a new run creates it: `runId`, `threadId` and
 * `startedAt` as given (`startedAt` to the millisecond), `status` `'running'`
 * when none is passed and the given one otherwise, and no `driverEpoch` or
 * `detachedSince` (both are absent until a claim or a detach writes them).
 * The returned record is the stored one.
 */
export async function checkRunCreate(store: RunStore): Promise<void> {
  const threadId = uniqueId('thread', 'create')
  const runId = uniqueId('run', 'create')
  const created = await store.createOrResume({ runId, threadId, startedAt: STARTED_AT })
  expect(created, 'createOrResume returns the record it created: runId, threadId, startedAt as given, status running by default').toMatchObject({ runId, threadId, startedAt: STARTED_AT, status: 'running' })
  expect(created.driverEpoch, 'a run that was never claimed has no driverEpoch').toBeUndefined()
  expect(created.detachedSince, 'a new run is not detached: detachedSince is absent').toBeUndefined()
  expect(await store.get(runId), 'get returns what createOrResume created').toEqual(created)

  const pausedId = uniqueId('run', 'create-status')
  const paused = await store.createOrResume({ runId: pausedId, threadId, startedAt: STARTED_AT + 1, status: 'interrupted' })
  expect(paused.status, 'createOrResume stores the status it is given on first creation').toBe('interrupted')
  expect((await store.get(pausedId))?.status, 'get returns the status createOrResume was given').toBe('interrupted')
}

/**
 * `createOrResume` of an existing run returns it UNCHANGED: the passed
 * `threadId`, `startedAt` and `status` are ignored, and fields written since
 * (here all eight) are kept. This is what makes resuming a run safe.
 */
export async function checkRunResume(store: RunStore): Promise<void> {
  const { runId, threadId } = await freshRun(store, 'resume')
  await store.update(runId, fullPatch())
  const before = await mustGet(store, runId, 'resume')
  const resumed = await store.createOrResume({ runId, threadId: uniqueId('thread', 'resume-other'), startedAt: STARTED_AT + 1_000, status: 'running' })
  expect(resumed, 'createOrResume of an existing run returns it unchanged (the passed threadId, startedAt and status are ignored)').toEqual(before)
  expect(resumed.threadId, 'createOrResume of an existing run keeps its threadId').toBe(threadId)
  expect(await store.get(runId), 'createOrResume of an existing run writes nothing').toEqual(before)
}

/** `get` of a run that was never created resolves to `null` (not `undefined`, not a throw). */
export async function checkRunGetUnknown(store: RunStore): Promise<void> {
  expect(await store.get(uniqueId('run', 'never-created')), 'get(runId) of an unknown run resolves to null').toBeNull()
}

/** `update` of an unknown run is a no-op: it resolves, and it creates no record. */
export async function checkRunUpdateUnknown(store: RunStore): Promise<void> {
  const runId = uniqueId('run', 'update-unknown')
  await mustResolve(store.update(runId, fullPatch()), 'update of an unknown runId resolves (a no-op, never a throw)')
  expect(await store.get(runId), 'update of an unknown runId must not create a record').toBeNull()
}

/**
 * Each of the eight fields round-trips through `update` then `get`: all in
 * one patch, each on its own, and every `RunStatus`, an `error` with and
 * without `code`, `cancelRequested` `false` as well as `true`.
 */
export async function checkRunFieldsRoundTrip(store: RunStore): Promise<void> {
  const { runId, threadId } = await freshRun(store, 'round-trip')
  const patch = fullPatch()
  await store.update(runId, patch)
  expect(await store.get(runId), 'get returns all eight fields one update wrote, unchanged, beside runId, threadId and startedAt').toEqual({ runId, threadId, startedAt: STARTED_AT, ...patch })

  for (const [field, value] of Object.entries(otherPatch()) as Array<[keyof RunPatch, unknown]>) {
    const single = await freshRun(store, `round-trip-${field}`)
    await store.update(single.runId, { [field]: value } as RunPatch)
    const record = await mustGet(store, single.runId, `round-trip of ${field}`)
    expect(record[field], `${field} written alone by update round-trips through get`).toEqual(value)
  }

  const statuses: RunStatus[] = ['interrupted', 'running', 'completed', 'failed', 'aborted']
  for (const status of statuses) {
    await store.update(runId, { status })
    expect((await store.get(runId))?.status, `status ${status} round-trips`).toBe(status)
  }
  await store.update(runId, { error: { message: 'no code' } })
  expect((await store.get(runId))?.error, 'an error without code round-trips without one').toEqual({ message: 'no code' })
  await store.update(runId, { cancelRequested: false })
  expect((await store.get(runId))?.cancelRequested, 'cancelRequested false round-trips as false').toBe(false)
}

/** A patch key that is omitted leaves its field alone: updating one field keeps the other seven as they were. */
export async function checkRunPatchOmittedKeyKeeps(store: RunStore): Promise<void> {
  const { runId } = await freshRun(store, 'omitted-key')
  await store.update(runId, fullPatch())
  for (const [field, value] of Object.entries(otherPatch()) as Array<[keyof RunPatch, unknown]>) {
    const before = await mustGet(store, runId, 'omitted key')
    await store.update(runId, { [field]: value } as RunPatch)
    expect(await store.get(runId), `update({ ${field} }) changes ${field} only: every key the patch omits keeps its value`).toEqual({ ...before, [field]: value })
  }
}

/**
 * A patch key set to `undefined` CLEARS its field (it reads back
 * `undefined`), and leaves the others alone. A store that skips `undefined`
 * values as "not given" fails here; a detach then could never be undone
 * (`detachedSince`), nor an epoch reset.
 */
export async function checkRunPatchUndefinedClears(store: RunStore): Promise<void> {
  for (const field of OPTIONAL_FIELDS) {
    const { runId } = await freshRun(store, `undefined-clears-${field}`)
    await store.update(runId, fullPatch())
    const before = await mustGet(store, runId, 'undefined clears')
    await store.update(runId, { [field]: undefined } as RunPatch)
    const after = await mustGet(store, runId, 'undefined clears')
    expect(after[field], `update({ ${field}: undefined }) clears ${field}: an explicit undefined is not "leave alone"`).toBeUndefined()
    expect(after, `update({ ${field}: undefined }) leaves every other field as it was`).toEqual({ ...before, [field]: undefined })
  }
  const { runId } = await freshRun(store, 'undefined-clears-mixed')
  await store.update(runId, fullPatch())
  await store.update(runId, { detachedSince: undefined, sandboxKey: 'reattached', driverEpoch: undefined })
  const mixed = await mustGet(store, runId, 'undefined clears')
  expect({ detachedSince: mixed.detachedSince, sandboxKey: mixed.sandboxKey, driverEpoch: mixed.driverEpoch }, 'one patch can clear some fields and set others').toEqual({ detachedSince: undefined, sandboxKey: 'reattached', driverEpoch: undefined })
  expect(mixed.usage, 'a field the mixed patch omits keeps its value').toEqual(USAGE)
}

/**
 * `findActiveRun(threadId)` finds the thread's `'running'` run and not a
 * terminal one: `null` for a thread with no runs or only finished ones
 * (`completed`, `failed`, `aborted`), the greatest `startedAt` when several
 * are running (whatever the creation order), never a run of another thread.
 */
export async function checkRunFindActiveRun(store: RunStore): Promise<void> {
  const threadId = uniqueId('thread', 'find-active')
  expect(await store.findActiveRun(threadId), 'findActiveRun of a thread with no runs resolves to null').toBeNull()

  const finished: RunStatus[] = ['completed', 'failed', 'aborted']
  for (const status of finished) {
    const { runId } = await freshRun(store, `find-active-${status}`, threadId)
    await store.update(runId, { status, finishedAt: STARTED_AT + 1 })
  }
  expect(await store.findActiveRun(threadId), 'findActiveRun ignores terminal runs (completed, failed, aborted): null when none is running').toBeNull()

  const { runId: active } = await freshRun(store, 'find-active-running', threadId)
  expect((await store.findActiveRun(threadId))?.runId, "findActiveRun finds the thread's running run").toBe(active)
  expect(await store.findActiveRun(threadId), 'findActiveRun returns the whole record, as get does').toEqual(await store.get(active))

  // Created later but started earlier: the greatest startedAt wins, not the last insert.
  const earlier = uniqueId('run', 'find-active-earlier')
  await store.createOrResume({ runId: earlier, threadId, startedAt: STARTED_AT - 60_000 })
  const otherThread = uniqueId('thread', 'find-active-other')
  await store.createOrResume({ runId: uniqueId('run', 'find-active-other'), threadId: otherThread, startedAt: STARTED_AT + 60_000 })
  expect((await store.findActiveRun(threadId))?.runId, 'with several running runs, findActiveRun returns the one with the greatest startedAt, and never a run of another thread').toBe(active)

  await store.update(active, { status: 'completed', finishedAt: STARTED_AT + 2 })
  expect((await store.findActiveRun(threadId))?.runId, 'once the newest run is terminal, findActiveRun falls back to the running one').toBe(earlier)
  await store.update(earlier, { status: 'aborted', finishedAt: STARTED_AT + 3 })
  expect(await store.findActiveRun(threadId), 'once every run of the thread is terminal, findActiveRun resolves to null').toBeNull()
}

/**
 * `listByThread(threadId)` (optional; checked when present): every run of
 * the thread, terminal ones included, ascending by `startedAt` whatever the
 * creation order, none of another thread, and `[]` for a thread with no runs.
 *
 * @throws Error naming the method when the store has no `listByThread`.
 */
export async function checkRunListByThread(store: RunStore): Promise<void> {
  const list = store.listByThread?.bind(store)
  if (!list) throw new Error('checkRunListByThread: this RunStore has no listByThread (it is optional); the check applies only to stores that implement it')
  const threadId = uniqueId('thread', 'list-by-thread')
  expect(await list(threadId), 'listByThread of a thread with no runs resolves to []').toEqual([])
  const offsets = [30, 10, 20]
  const ids = offsets.map((offset) => uniqueId('run', `list-by-thread-${offset}`))
  for (const [i, offset] of offsets.entries()) await store.createOrResume({ runId: ids[i]!, threadId, startedAt: STARTED_AT + offset })
  await store.update(ids[1]!, { status: 'completed', finishedAt: STARTED_AT + 40 })
  await store.createOrResume({ runId: uniqueId('run', 'list-by-thread-other'), threadId: uniqueId('thread', 'list-by-thread-other'), startedAt: STARTED_AT + 15 })
  const listed = await list(threadId)
  expect(
    listed.map((r) => r.runId),
    'listByThread returns every run of the thread (terminal ones too), ascending by startedAt, and none of another thread',
  ).toEqual([ids[1], ids[2], ids[0]])
  expect(listed[0], 'listByThread returns whole records, as get does').toEqual(await store.get(ids[1]!))
}

/**
 * `listReclaimable({ now, ttlMs })` (optional; checked when present):
 * exactly the runs with ALL THREE of status `'running'`, `detachedSince`
 * set, and `detachedSince <= now - ttlMs`, the cutoff inclusive. Only this
 * check's runs are looked at in the answer, so other rows do not matter.
 *
 * @throws Error naming the method when the store has no `listReclaimable`.
 */
export async function checkRunListReclaimable(store: RunStore): Promise<void> {
  const list = store.listReclaimable?.bind(store)
  if (!list) throw new Error('checkRunListReclaimable: this RunStore has no listReclaimable (it is optional); the check applies only to stores that implement it')
  const now = STARTED_AT + 3_600_000
  const ttlMs = 60_000
  const cutoff = now - ttlMs
  const threadId = uniqueId('thread', 'reclaimable')
  const detachedLongAgo = cutoff - 30_000
  // Each run gets these patches in order, so a detach that was undone is a real second write.
  const cases: Array<{ name: string; patches: RunPatch[]; reclaimable: boolean }> = [
    { name: 'detached long ago', patches: [{ detachedSince: detachedLongAgo, sandboxKey: 'k1' }], reclaimable: true },
    { name: 'detached exactly at now - ttlMs (inclusive)', patches: [{ detachedSince: cutoff }], reclaimable: true },
    { name: 'detached 1 ms after the cutoff', patches: [{ detachedSince: cutoff + 1 }], reclaimable: false },
    { name: 'running, never detached', patches: [], reclaimable: false },
    { name: 'detached, then reattached (detachedSince cleared)', patches: [{ detachedSince: detachedLongAgo }, { detachedSince: undefined }], reclaimable: false },
    { name: 'completed with an old detachedSince', patches: [{ detachedSince: detachedLongAgo }, { status: 'completed', finishedAt: cutoff }], reclaimable: false },
    { name: 'interrupted with an old detachedSince', patches: [{ detachedSince: detachedLongAgo }, { status: 'interrupted' }], reclaimable: false },
  ]
  const ids: string[] = []
  for (const [i, c] of cases.entries()) {
    const { runId } = await freshRun(store, `reclaimable-${i}`, threadId)
    for (const patch of c.patches) await store.update(runId, patch)
    ids.push(runId)
  }
  const found = new Set(idsAmong(await list({ now, ttlMs }), ids))
  for (const [i, c] of cases.entries()) {
    expect(found.has(ids[i]!), `listReclaimable: a run ${c.name} is ${c.reclaimable ? '' : 'NOT '}reclaimable (all three: status running, detachedSince set, detachedSince <= now - ttlMs)`).toBe(c.reclaimable)
  }
}

/**
 * `listUndetachedRuns({ startedBefore, limit })` (an optional method of this
 * package's stores, `UndetachedRunLister`, where `reapDetachedRuns` looks for
 * orphans; checked when present): exactly the runs with status `'running'`,
 * no `detachedSince`, and `startedAt <= startedBefore` (inclusive), oldest
 * `startedAt` first; `limit: 0` lists none. Only this check's runs are
 * looked at in the answer.
 *
 * @throws Error naming the method when the store has no `listUndetachedRuns`.
 */
export async function checkRunListUndetachedRuns(store: RunStore): Promise<void> {
  const list = (store as Partial<UndetachedRunLister>).listUndetachedRuns?.bind(store)
  if (!list) throw new Error('checkRunListUndetachedRuns: this RunStore has no listUndetachedRuns (it is optional); the check applies only to stores that implement it')
  // Older than the other checks' runs, and apart from earlier suite runs on a shared database.
  const base = 1_000_000_000_000 + Math.floor(Math.random() * 1_000_000) * 100
  const startedBefore = base + 50
  const threadId = uniqueId('thread', 'undetached')
  const cases: Array<{ name: string; startedAt: number; patches: RunPatch[]; listed: boolean }> = [
    { name: 'running, never detached, started before', startedAt: base + 20, patches: [], listed: true },
    { name: 'running, never detached, started earliest', startedAt: base + 10, patches: [], listed: true },
    { name: 'started exactly at startedBefore (inclusive)', startedAt: startedBefore, patches: [], listed: true },
    { name: 'detached, then reattached (detachedSince cleared)', startedAt: base + 30, patches: [{ detachedSince: base + 40 }, { detachedSince: undefined }], listed: true },
    { name: 'started 1 ms after startedBefore', startedAt: startedBefore + 1, patches: [], listed: false },
    { name: 'detached', startedAt: base + 5, patches: [{ detachedSince: base + 40 }], listed: false },
    { name: 'completed', startedAt: base + 6, patches: [{ status: 'completed', finishedAt: base + 7 }], listed: false },
  ]
  const ids: string[] = []
  for (const [i, c] of cases.entries()) {
    const runId = uniqueId('run', `undetached-${i}`)
    await store.createOrResume({ runId, threadId, startedAt: c.startedAt })
    for (const patch of c.patches) await store.update(runId, patch)
    ids.push(runId)
  }
  const found = idsAmong(await list({ startedBefore, limit: 10_000 }), ids)
  for (const [i, c] of cases.entries()) {
    expect(found.includes(ids[i]!), `listUndetachedRuns: a run ${c.name} is ${c.listed ? '' : 'NOT '}listed (status running, no detachedSince, startedAt <= startedBefore)`).toBe(c.listed)
  }
  expect(found, 'listUndetachedRuns lists the oldest startedAt first').toEqual([ids[1], ids[0], ids[3], ids[2]])
  expect(await list({ startedBefore, limit: 0 }), 'listUndetachedRuns with limit 0 lists none').toEqual([])
}

/**
 * `listEndedRuns({ finishedAfter, finishedBefore, limit })` (an optional
 * method of this package's stores, `EndedRunLister`, where `reapDetachedRuns`
 * looks for sandboxes ended runs left behind; checked when present): exactly
 * the runs with a terminal status, a `sandboxKey`, and `finishedAt` in the
 * window (both ends inclusive), newest `finishedAt` first; `limit` caps the
 * answer. Only this check's runs are looked at in the answer.
 *
 * @throws Error naming the method when the store has no `listEndedRuns`.
 */
export async function checkRunListEndedRuns(store: RunStore): Promise<void> {
  const list = (store as Partial<EndedRunLister>).listEndedRuns?.bind(store)
  if (!list) throw new Error('checkRunListEndedRuns: this RunStore has no listEndedRuns (it is optional); the check applies only to stores that implement it')
  // Older than the other checks' runs, and apart from earlier suite runs on a shared database.
  const base = 900_000_000_000 + Math.floor(Math.random() * 1_000_000) * 100
  const [finishedAfter, finishedBefore] = [base + 10, base + 50]
  const threadId = uniqueId('thread', 'ended')
  const key = 'sandbox-key-of-the-ended-check'
  const cases: Array<{ name: string; patch: RunPatch; listed: boolean }> = [
    { name: 'failed inside the window', patch: { status: 'failed', finishedAt: base + 30, sandboxKey: key }, listed: true },
    { name: 'aborted at the window start (inclusive)', patch: { status: 'aborted', finishedAt: finishedAfter, sandboxKey: key }, listed: true },
    { name: 'completed at the window end (inclusive)', patch: { status: 'completed', finishedAt: finishedBefore, sandboxKey: key }, listed: true },
    { name: 'failed 1 ms after the window', patch: { status: 'failed', finishedAt: finishedBefore + 1, sandboxKey: key }, listed: false },
    { name: 'failed 1 ms before the window', patch: { status: 'failed', finishedAt: finishedAfter - 1, sandboxKey: key }, listed: false },
    { name: 'failed without a sandboxKey', patch: { status: 'failed', finishedAt: base + 20 }, listed: false },
    { name: 'still running (finishedAt set by hand)', patch: { finishedAt: base + 20, sandboxKey: key }, listed: false },
  ]
  const ids: string[] = []
  for (const [i, c] of cases.entries()) {
    const runId = uniqueId('run', `ended-${i}`)
    await store.createOrResume({ runId, threadId, startedAt: base })
    await store.update(runId, c.patch)
    ids.push(runId)
  }
  const found = idsAmong(await list({ finishedAfter, finishedBefore, limit: 10_000 }), ids)
  for (const [i, c] of cases.entries()) {
    expect(found.includes(ids[i]!), `listEndedRuns: a run ${c.name} is ${c.listed ? '' : 'NOT '}listed (terminal status, a sandboxKey, finishedAfter <= finishedAt <= finishedBefore)`).toBe(c.listed)
  }
  expect(found, 'listEndedRuns lists the newest finishedAt first').toEqual([ids[2], ids[0], ids[1]])
  expect(await list({ finishedAfter, finishedBefore, limit: 0 }), 'listEndedRuns with limit 0 lists none').toEqual([])
}

const makeStoreSchema = z.custom<() => RunStore>((v) => typeof v === 'function', { message: 'expected a function that returns the RunStore under test, e.g. () => new InMemoryRunStore()' })
const storeSchema = z.custom<RunStore>(
  (v) => typeof v === 'object' && v !== null && ['createOrResume', 'update', 'get', 'findActiveRun'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
  { message: 'expected a RunStore with the four required methods (createOrResume, update, get, findActiveRun)' },
)

/** One entry of {@link DURABLE_RUN_FIELDS_CHECKS}: a title, the check, and the optional `RunStore` method it needs. */
export type DurableRunFieldsCheck = readonly [title: string, check: (store: RunStore) => Promise<void>, needs?: 'listByThread' | 'listReclaimable' | 'listUndetachedRuns' | 'listEndedRuns']

/** Every durable-run-fields check, in the order the suite runs them. A check with a third element runs only when the store has that optional method. */
export const DURABLE_RUN_FIELDS_CHECKS: ReadonlyArray<DurableRunFieldsCheck> = [
  ['createOrResume creates a record (status running by default)', checkRunCreate],
  ['createOrResume of an existing run returns it unchanged', checkRunResume],
  ['get of an unknown run resolves to null', checkRunGetUnknown],
  ['update of an unknown run is a no-op', checkRunUpdateUnknown],
  ['the eight fields round-trip through update and get', checkRunFieldsRoundTrip],
  ['an omitted patch key leaves its field alone', checkRunPatchOmittedKeyKeeps],
  ['an explicit undefined in a patch clears its field', checkRunPatchUndefinedClears],
  ['findActiveRun finds the running run of a thread, not a terminal one', checkRunFindActiveRun],
  ['listByThread lists every run of a thread by startedAt', checkRunListByThread, 'listByThread'],
  ['listReclaimable returns running runs detached at or before now - ttlMs', checkRunListReclaimable, 'listReclaimable'],
  ['listUndetachedRuns returns running, never-detached runs started at or before startedBefore, oldest first', checkRunListUndetachedRuns, 'listUndetachedRuns'],
  ['listEndedRuns returns terminal runs with a sandboxKey that finished in the window, newest first', checkRunListEndedRuns, 'listEndedRuns'],
]

/**
 * Register the durable-run-fields conformance suite in the current vitest
 * file: one `describe` named after the store, one test per entry of
 * {@link DURABLE_RUN_FIELDS_CHECKS}. The `listByThread` and
 * `listReclaimable` tests are skipped, naming the method, on a store without
 * it (both are optional and feature-detected). `makeStore` runs before each
 * test; a durable store may return the same database every time (checks
 * use ids unique to the run). The records the checks create are left behind,
 * since `RunStore` has no delete: point the suite at a test database.
 *
 * @param name - Shown in the suite title, e.g. `sqlite`.
 * @param makeStore - Builds (or returns) the `RunStore` under test.
 * @throws SandboxConfigError `invalid-option` when `makeStore` is not a function, and (in the test) when what it returns lacks a required method.
 * @example
 * ```ts
 * import { InMemoryRunStore } from '@tanstack/ai'
 * import { runDurableRunFieldsConformance } from '@tanstack/ai-sandbox/testkit'
 *
 * runDurableRunFieldsConformance('in-memory', () => new InMemoryRunStore())
 * ```
 */
export function runDurableRunFieldsConformance(name: string, makeStore: () => RunStore | Promise<RunStore>): void {
  parseOptions(makeStoreSchema, makeStore, 'runDurableRunFieldsConformance.makeStore')
  describe(`durable run fields conformance: ${name}`, () => {
    let store: RunStore
    beforeEach(async () => {
      store = parseOptions(storeSchema, await makeStore(), 'runDurableRunFieldsConformance.makeStore()')
    })
    for (const [title, check, needs] of DURABLE_RUN_FIELDS_CHECKS) {
      it(title, async (context) => {
        if (needs && typeof (store as unknown as Record<string, unknown>)[needs] !== 'function') context.skip(`the store has no ${needs} (optional; consumers feature-detect it)`)
        await check(store)
      })
    }
  })
}
