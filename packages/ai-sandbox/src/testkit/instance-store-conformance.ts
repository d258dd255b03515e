/**
 * `runSandboxInstanceStoreConformance`: the `SandboxInstanceStore` contract as
 * a vitest suite, plus each check as a plain function. Every check uses keys
 * unique to this run and deletes them afterwards, so it is safe against a
 * shared durable database. Besides the interface's own rules, the kit holds
 * stores to value semantics: records are copied in and out, never shared.
 */
import { randomUUID } from 'node:crypto'
import { beforeEach, describe, expect, it } from 'vitest'
import type { SandboxInstanceRecord, SandboxInstanceStore } from '../definition/instance-store.js'

const RUN = randomUUID().slice(0, 8)

/** A key unique to this run, so checks never collide with real rows or each other. */
function key(name: string): string {
  return `conformance:${RUN}:${name}`
}

/** A record with every field set. */
function fullRecord(k: string, overrides: Partial<SandboxInstanceRecord> = {}): SandboxInstanceRecord {
  return {
    key: k,
    provider: 'conformance-provider',
    providerSandboxId: `sbx-${randomUUID()}`,
    latestSnapshotId: 'snap-1',
    latestSnapshotAt: 1_700_000_000_045,
    threadId: 'thread-1',
    latestRunId: 'run-1',
    updatedAt: 1_700_000_000_123,
    ...overrides,
  }
}

/** Run `body` with the given keys, deleting them afterwards whatever happens. */
async function withKeys(store: SandboxInstanceStore, keys: readonly string[], body: () => Promise<void>): Promise<void> {
  try {
    await body()
  } finally {
    await Promise.all(keys.map((k) => store.delete(k)))
  }
}

/** `get` of a key that was never written resolves to `null` (not `undefined`, not a throw). */
export async function checkStoreGetMissing(store: SandboxInstanceStore): Promise<void> {
  expect(await store.get(key(`missing-${randomUUID()}`)), 'get(key) of a missing key resolves to null').toBeNull()
}

/** `upsert` then `get` round-trips every field exactly (strings, and `updatedAt` as the same number). */
export async function checkStoreRoundTrip(store: SandboxInstanceStore): Promise<void> {
  const k = key('round-trip')
  const record = fullRecord(k)
  await withKeys(store, [k], async () => {
    await store.upsert(record)
    expect(await store.get(k), 'get returns every field upsert stored, unchanged').toEqual(record)
    const minimal = fullRecord(k)
    delete minimal.latestSnapshotId
    delete minimal.latestSnapshotAt
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
    expect(stored?.latestSnapshotAt, 'upsert is a FULL replace: latestSnapshotAt left out must be cleared (undefined), not kept from the old record').toBeUndefined()
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
    await expect(store.delete(k), 'delete of an already deleted key resolves (no-op)').resolves.toBeUndefined()
    await expect(store.delete(key(`never-${randomUUID()}`)), 'delete of a key that never existed resolves (no-op)').resolves.toBeUndefined()
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

/**
 * Records are values, not live references: mutating an object returned by
 * `get`, or the object passed to `upsert` after it resolved, does not change
 * what the store holds. (Part of the contract: `ensure` and middleware
 * mutate records they read; a store handing out its own objects would be
 * corrupted by that, while a database-backed store behaves this way for free.)
 */
export async function checkStoreReturnsCopies(store: SandboxInstanceStore): Promise<void> {
  const k = key('copies')
  await withKeys(store, [k], async () => {
    const input = fullRecord(k)
    await store.upsert(input)
    input.threadId = 'mutated-input'
    expect((await store.get(k))?.threadId, 'mutating the object passed to upsert (after it resolved) does not change the stored record').toBe('thread-1')
    const first = await store.get(k)
    if (first) {
      first.threadId = 'mutated-output'
      first.latestRunId = 'mutated-output'
    }
    const second = await store.get(k)
    expect(second?.threadId, 'mutating a record returned by get does not change the store').toBe('thread-1')
    expect(second?.latestRunId, 'mutating a record returned by get does not change the store').toBe('run-1')
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
  ['returned records are copies, not live references', checkStoreReturnsCopies],
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
