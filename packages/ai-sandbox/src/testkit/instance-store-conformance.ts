/**
 * `runSandboxInstanceStoreConformance`: the `SandboxInstanceStore` contract as
 * a vitest suite, plus each check as a plain function. Every check uses keys
 * unique to this run and deletes them afterwards, so it is safe against a
 * shared durable database. Design notes: docs/design/testkit.md
 */
import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import type { SandboxInstanceRecord, SandboxInstanceStore } from '../definition/instance-store.js'

const RUN = randomUUID().slice(0, 8)

/** A key unique to this run, so checks never collide with real rows or each other. */
function key(name: string): string {
  return `conformance:${RUN}:${name}`
}

/** A record with every field of spec 003 set (and no other). */
function fullRecord(k: string, overrides: Partial<SandboxInstanceRecord> = {}): SandboxInstanceRecord {
  return {
    key: k,
    provider: 'conformance-provider',
    providerSandboxId: `sbx-${randomUUID()}`,
    latestSnapshotId: 'snap-1',
    threadId: 'thread-1',
    latestRunId: 'run-1',
    updatedAt: 1_700_000_000_123,
    ...overrides,
  }
}

/**
 * Run `body` with the given keys, deleting them afterwards whatever happens.
 * A failing cleanup never hides the check's own failure; after a passing body
 * it fails naming the rule (some keys are already gone by then).
 */
async function withKeys(store: SandboxInstanceStore, keys: readonly string[], body: () => Promise<void>): Promise<void> {
  const outcome = await body().then(
    () => ({ passed: true as const }),
    (error: unknown) => ({ passed: false as const, error }),
  )
  const results = await Promise.allSettled(keys.map((k) => store.delete(k)))
  if (!outcome.passed) throw outcome.error
  const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (rejected) {
    throw new Error(`Contract violated: delete(key) resolves for every key, also one that is already gone (a no-op); cleanup got: ${String(rejected.reason)}`, { cause: rejected.reason })
  }
}

/** Await `promise`; a rejection fails naming `rule` and carrying the store's error. */
async function mustResolve(promise: Promise<unknown>, rule: string): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e ?? new Error('rejected without a reason'),
  )
  if (error !== undefined) throw new Error(`Contract violated: ${rule}; it rejected with: ${String(error)}`, { cause: error })
}

/** `get` of a key that was never written resolves to `null` (not `undefined`, not a throw). */
export async function checkStoreGetMissing(store: SandboxInstanceStore): Promise<void> {
  expect(await store.get(key(`missing-${randomUUID()}`)), 'get(key) of a missing key resolves to null').toBeNull()
}

/**
 * `upsert` then `get` round-trips the seven fields exactly (strings, and
 * `updatedAt` as the same number: `snapshotMaxAge` measures from it).
 */
export async function checkStoreRoundTrip(store: SandboxInstanceStore): Promise<void> {
  const k = key('round-trip')
  const record = fullRecord(k)
  await withKeys(store, [k], async () => {
    await store.upsert(record)
    expect(await store.get(k), 'get returns every field upsert stored, unchanged').toEqual(record)
    const minimal = fullRecord(k)
    delete minimal.latestSnapshotId
    delete minimal.latestRunId
    await store.upsert(minimal)
    expect(await store.get(k), 'a record without the optional fields round-trips too').toEqual(minimal)
  })
}

/** A second `upsert` fully replaces the record: optional fields left out are cleared, never merged. */
export async function checkStoreUpsertReplaces(store: SandboxInstanceStore): Promise<void> {
  const k = key('full-replace')
  await withKeys(store, [k], async () => {
    await store.upsert(fullRecord(k))
    const replacement: SandboxInstanceRecord = { key: k, provider: 'other-provider', providerSandboxId: 'sbx-2', threadId: 'thread-2', updatedAt: 1_700_000_999_000 }
    await store.upsert(replacement)
    const stored = await store.get(k)
    expect(stored?.latestSnapshotId, 'upsert is a FULL replace: latestSnapshotId left out must be cleared (undefined), not kept from the old record').toBeUndefined()
    expect(stored?.latestRunId, 'upsert is a FULL replace: latestRunId left out must be cleared (undefined), not kept from the old record').toBeUndefined()
    expect(stored, 'upsert replaces every field of an existing record').toEqual(replacement)
  })
}

/** `delete` removes the record, and deleting a missing key is a no-op. */
export async function checkStoreDelete(store: SandboxInstanceStore): Promise<void> {
  const k = key('delete')
  await withKeys(store, [k], async () => {
    await store.upsert(fullRecord(k))
    await store.delete(k)
    expect(await store.get(k), 'get after delete(key) resolves to null').toBeNull()
    await mustResolve(store.delete(k), 'delete of an already deleted key resolves (no-op)')
    await mustResolve(store.delete(key(`never-${randomUUID()}`)), 'delete of a key that never existed resolves (no-op)')
  })
}

/** Keys are independent: exact, case-sensitive matches only, and writing or deleting one leaves the others alone. */
export async function checkStoreKeysIndependent(store: SandboxInstanceStore): Promise<void> {
  const keys = [key('k'), key('k:1'), key('K'), key('k ')]
  await withKeys(store, keys, async () => {
    for (const [i, k] of keys.entries()) await store.upsert(fullRecord(k, { threadId: `thread-${i}` }))
    for (const [i, k] of keys.entries()) {
      expect((await store.get(k))?.threadId, `key ${JSON.stringify(k)} has its own record (keys match exactly: case, prefixes and trailing spaces count)`).toBe(`thread-${i}`)
    }
    await store.delete(keys[0]!)
    expect(await store.get(keys[0]!), 'the deleted key is gone').toBeNull()
    for (const k of keys.slice(1)) expect(await store.get(k), `delete(${JSON.stringify(keys[0])}) must not remove ${JSON.stringify(k)}`).not.toBeNull()
  })
}

/**
 * Keys with colons, slashes, spaces, quotes, percent signs and unicode work as
 * plain strings, and long keys are kept whole: real compound keys embed
 * caller-chosen tenant and thread ids, so their length is not bounded (two
 * keys differing only after character 1000 are tested).
 */
export async function checkStoreOddKeys(store: SandboxInstanceStore): Promise<void> {
  const long = 'k'.repeat(1000)
  const keys = ['a:b:c', 'tenant/1/thread/2', 'ünïcödé-ключ-🔑', 'with space', `quote'"\``, '%2F..%00', 'back\\slash', `${long}-one`, `${long}-two`].map(key)
  await withKeys(store, keys, async () => {
    for (const k of keys) await store.upsert(fullRecord(k, { threadId: `t-${k}` }))
    for (const k of keys) {
      const got = await store.get(k)
      expect(got?.key, `key ${JSON.stringify(k)} round-trips unchanged`).toBe(k)
      expect(got?.threadId, `key ${JSON.stringify(k)} finds its own record`).toBe(`t-${k}`)
    }
  })
}

/** Concurrent upserts of different keys all land. */
export async function checkStoreConcurrentUpserts(store: SandboxInstanceStore): Promise<void> {
  const keys = Array.from({ length: 25 }, (_, i) => key(`concurrent-${i}`))
  await withKeys(store, keys, async () => {
    await Promise.all(keys.map((k, i) => store.upsert(fullRecord(k, { threadId: `thread-${i}` }))))
    const got = await Promise.all(keys.map((k) => store.get(k)))
    expect(got.map((r) => r?.threadId), 'every one of 25 concurrent upserts of different keys is stored').toEqual(keys.map((_, i) => `thread-${i}`))
  })
}

/** Every store check, in the order the suite runs them. */
export const INSTANCE_STORE_CHECKS: ReadonlyArray<readonly [title: string, check: (store: SandboxInstanceStore) => Promise<void>]> = [
  ['get of a missing key resolves to null', checkStoreGetMissing],
  ['upsert then get round-trips every field', checkStoreRoundTrip],
  ['upsert is a full replace (left-out optional fields are cleared)', checkStoreUpsertReplaces],
  ['delete removes the record; deleting a missing key is a no-op', checkStoreDelete],
  ['keys are independent (exact, case-sensitive)', checkStoreKeysIndependent],
  ['keys with colons, slashes, unicode and 1000+ characters work', checkStoreOddKeys],
  ['concurrent upserts of different keys all land', checkStoreConcurrentUpserts],
]

/**
 * Register the instance-store conformance suite in the current vitest file.
 * `makeStore` runs before each test; a durable store may return the same
 * database every time (checks use keys unique to the run and delete them).
 *
 * @param name - Shown in the suite title, e.g. `sqlite`.
 * @param makeStore - Builds (or returns) the store under test.
 * @example
 * ```ts
 * import { InMemorySandboxInstanceStore } from '@tanstack/ai-sandbox'
 * import { runSandboxInstanceStoreConformance } from '@tanstack/ai-sandbox/testkit'
 *
 * runSandboxInstanceStoreConformance('in-memory', () => new InMemorySandboxInstanceStore())
 * ```
 */
export function runSandboxInstanceStoreConformance(name: string, makeStore: () => SandboxInstanceStore | Promise<SandboxInstanceStore>): void {
  describe(`sandbox instance store conformance: ${name}`, () => {
    let store: SandboxInstanceStore
    beforeEach(async () => {
      store = await makeStore()
    })
    for (const [title, check] of INSTANCE_STORE_CHECKS) it(title, () => check(store))
  })
}
