/**
 * The instance-store kit proves what core relies on, no more and no less: spec
 * 003's own reference store (which hands out the objects it holds) passes the
 * whole suite, and the two mistakes 003 warns about each fail it, naming the rule.
 */
import { describe, expect, it } from 'vitest'
import type { SandboxInstanceStore } from '../../src/definition/instance-store.js'
import { checkStoreDelete, checkStoreUpsertReplaces, INSTANCE_STORE_CHECKS, runSandboxInstanceStoreConformance } from '../../src/testkit/index.js'
import { mergingUpsertStore, sevenFieldStore, SpecReferenceStore, throwingDeleteStore } from '../helpers/spec-stores.js'

runSandboxInstanceStoreConformance("spec 003's reference in-memory store", () => new SpecReferenceStore())
runSandboxInstanceStoreConformance('a store of exactly the seven spec fields', () => sevenFieldStore())

/** Run every check of the suite on `store`; the titles of those that fail, with their messages. */
async function failures(makeStore: () => SandboxInstanceStore): Promise<Map<string, string>> {
  const failed = new Map<string, string>()
  for (const [title, check] of INSTANCE_STORE_CHECKS) {
    await check(makeStore()).catch((error: unknown) => failed.set(title, (error as Error).message))
  }
  return failed
}

describe('the instance-store kit fails the stores spec 003 warns about', () => {
  it('the reference store passes every check', async () => {
    expect(await failures(() => new SpecReferenceStore())).toEqual(new Map())
  })

  it('a merging upsert (a stale latestSnapshotId survives) fails the full-replace check', async () => {
    await expect(checkStoreUpsertReplaces(mergingUpsertStore())).rejects.toThrow(/upsert is a FULL replace: latestSnapshotId left out must be cleared/)
    const failed = await failures(mergingUpsertStore)
    expect(failed.get('upsert is a full replace (left-out optional fields are cleared)')).toMatch(/latestSnapshotId left out must be cleared/)
    expect(failed.get('upsert then get round-trips every field'), 'a merged row also fails the round trip of a record without optional fields').toMatch(/without the optional fields/)
  })

  it('a delete that throws for a missing key fails the delete check, naming the no-op rule', async () => {
    await expect(checkStoreDelete(throwingDeleteStore())).rejects.toThrow(/Contract violated: delete of an already deleted key resolves \(no-op\); it rejected with: Error: no row/)
    const failed = await failures(throwingDeleteStore)
    expect(failed.get('delete removes the record; deleting a missing key is a no-op')).toMatch(/no-op/)
    for (const message of failed.values()) expect(message, 'every failure names the no-op rule, not only the store error').toMatch(/no-op/)
  })
})
