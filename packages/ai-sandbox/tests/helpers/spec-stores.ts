/**
 * Instance stores for tests: spec 003's reference in-memory store (it keeps
 * and hands out the very objects it is given), a store that keeps exactly the
 * spec's seven record fields (as a BYO table with those columns would), and
 * the two broken stores spec 003 warns about.
 */
import type { SandboxInstanceRecord, SandboxInstanceStore } from '../../src/definition/instance-store.js'

/** Spec 003's `InMemorySandboxInstanceStore`, same behaviour: `get` returns the stored object itself. */
export class SpecReferenceStore implements SandboxInstanceStore {
  private readonly map = new Map<string, SandboxInstanceRecord>()

  get(key: string): Promise<SandboxInstanceRecord | null> {
    return Promise.resolve(this.map.get(key) ?? null)
  }

  upsert(record: SandboxInstanceRecord): Promise<void> {
    this.map.set(record.key, record)
    return Promise.resolve()
  }

  delete(key: string): Promise<void> {
    this.map.delete(key)
    return Promise.resolve()
  }
}

/** The seven fields of spec 003's `SandboxInstanceRecord`. */
export const SPEC_RECORD_FIELDS = ['key', 'provider', 'providerSandboxId', 'latestSnapshotId', 'threadId', 'latestRunId', 'updatedAt'] as const

/** A store with one column per spec field: anything else core might write is dropped. `rows` shows what it holds. */
export function sevenFieldStore(): SandboxInstanceStore & { rows: Map<string, Record<string, unknown>> } {
  const rows = new Map<string, Record<string, unknown>>()
  const pick = (record: object) => Object.fromEntries(SPEC_RECORD_FIELDS.filter((f) => (record as Record<string, unknown>)[f] !== undefined).map((f) => [f, (record as Record<string, unknown>)[f]]))
  return {
    rows,
    get: async (key) => {
      const row = rows.get(key)
      return row ? (pick(row) as unknown as SandboxInstanceRecord) : null
    },
    upsert: async (record) => void rows.set(record.key, pick(record)),
    delete: async (key) => void rows.delete(key),
  }
}

/** Spec 003's first warning: an upsert that merges with the old row, so a left-out `latestSnapshotId` survives. */
export function mergingUpsertStore(): SandboxInstanceStore {
  const rows = new Map<string, SandboxInstanceRecord>()
  return {
    get: async (key) => rows.get(key) ?? null,
    upsert: async (record) => void rows.set(record.key, { ...rows.get(record.key), ...record }),
    delete: async (key) => void rows.delete(key),
  }
}

/** Spec 003's second warning: a delete that throws for a key it does not hold. */
export function throwingDeleteStore(): SandboxInstanceStore {
  const rows = new Map<string, SandboxInstanceRecord>()
  return {
    get: async (key) => rows.get(key) ?? null,
    upsert: async (record) => void rows.set(record.key, record),
    delete: async (key) => {
      if (!rows.delete(key)) throw new Error(`no row ${key}`)
    },
  }
}
