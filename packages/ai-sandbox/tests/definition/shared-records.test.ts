/**
 * Issue 30 item 4: an instance store may hand out the objects it holds (spec
 * 003's own `InMemorySandboxInstanceStore` keeps and returns the caller's
 * objects), because core never changes a record it read or wrote. Proven
 * with a store whose records are frozen, the objects it is given and the
 * ones it returns alike: ensure (create, then resume), release and destroy
 * run through it without a single write to a record (a write to a frozen
 * object throws in ESM's strict mode).
 */
import { describe, expect, it } from 'vitest'
import { defineSandbox, type SandboxInstanceRecord, type SandboxInstanceStore } from '../../src/index.js'
import { memoryProvider } from '../testkit/memory-provider.js'

/** The spec's in-memory store, with every record frozen as it comes in. */
class FrozenRecordStore implements SandboxInstanceStore {
  readonly map = new Map<string, SandboxInstanceRecord>()
  async get(key: string): Promise<SandboxInstanceRecord | null> {
    return this.map.get(key) ?? null
  }
  async upsert(record: SandboxInstanceRecord): Promise<void> {
    this.map.set(record.key, Object.freeze(record))
  }
  async delete(key: string): Promise<void> {
    this.map.delete(key)
  }
}

describe('an instance store that hands out the objects it holds', () => {
  it('works: core never writes to a record it read or passed to upsert', async () => {
    const instances = new FrozenRecordStore()
    const sandbox = defineSandbox({ id: 'shared-records', provider: memoryProvider(), lifecycle: { reuse: 'thread' } })
    const first = { threadId: 't1', runId: 'r1' }
    const handle = await sandbox.ensure({ ...first, instances })
    sandbox.release({ key: sandbox.key(first), instances })
    const again = await sandbox.ensure({ threadId: 't1', runId: 'r2', instances })
    expect(again.id, 'the second run resumed the recorded sandbox').toBe(handle.id)
    expect(Object.isFrozen(await instances.get(sandbox.key(first)))).toBe(true)
    sandbox.release({ key: sandbox.key(first), instances })
    await sandbox.destroy({ key: sandbox.key(first), instances })
    expect(await instances.get(sandbox.key(first))).toBeNull()
  })
})
