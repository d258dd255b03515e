/**
 * The sandbox instance store: which provider sandbox (and snapshot) serves a
 * compound sandbox key, so `ensure` can resume it from any process. Owns the
 * contract, the in-memory default and the ambient capability; it knows
 * nothing about chat transcripts. Source: spec 003.
 */

import { z } from 'zod'

/**
 * One sandbox instance, keyed by the compound sandbox key. Exactly the seven
 * fields of spec 003: a store that persists these (and drops anything else)
 * supports every feature, snapshot restore and `snapshotMaxAge` included.
 */
export interface SandboxInstanceRecord {
  /** The compound key (see `computeSandboxKey`). */
  key: string
  /** Name of the provider that owns `providerSandboxId`. */
  provider: string
  /** The provider's sandbox id, passed to `provider.resume({ id })`. */
  providerSandboxId: string
  /** Latest provider snapshot for this key, when the provider has snapshots. */
  latestSnapshotId?: string
  threadId: string
  latestRunId?: string
  /** Epoch ms of the last write (on a workspace snapshot record: when the snapshot was recorded, which `snapshotMaxAge` measures). */
  updatedAt: number
}

/**
 * Maps a compound key to the sandbox to resume. Implement it over your own
 * database and prove it with `runSandboxInstanceStoreConformance` from
 * `@tanstack/ai-sandbox/testkit`. A store may keep and hand out the very
 * objects it is given (as spec 003's in-memory store does): core never
 * mutates a record it passed to `upsert` or got from `get`.
 */
export interface SandboxInstanceStore {
  /** The record for `key`, or `null` when there is none (never throws for a missing key). */
  get: (key: string) => Promise<SandboxInstanceRecord | null>
  /**
   * Insert or FULLY replace the record for `record.key`: optional fields left
   * out (`latestSnapshotId`, `latestRunId`) must clear stored values, never merge.
   */
  upsert: (record: SandboxInstanceRecord) => Promise<void>
  /** Remove the record; deleting a missing key is a no-op. */
  delete: (key: string) => Promise<void>
}

/** Validates an option that takes a {@link SandboxInstanceStore} (an object with `get`, `upsert` and `delete`). */
export const instanceStoreSchema = z.custom<SandboxInstanceStore>(
  (v) => typeof v === 'object' && v !== null && ['get', 'upsert', 'delete'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
  { message: 'expected a SandboxInstanceStore (an object with get, upsert and delete)' },
)

/**
 * Type a store inline with contract checking, no annotation needed.
 *
 * @example
 * ```ts
 * const instances = defineSandboxInstanceStore({
 *   get: async (key) => rows.get(key) ?? null,
 *   upsert: async (record) => void rows.set(record.key, record),
 *   delete: async (key) => void rows.delete(key),
 * })
 * ```
 */
export function defineSandboxInstanceStore(store: SandboxInstanceStore): SandboxInstanceStore {
  return store
}


/** In-memory {@link SandboxInstanceStore}: resume works within one process only. Records are copied in and out (more than the contract asks). */
export class InMemorySandboxInstanceStore implements SandboxInstanceStore {
  private readonly records = new Map<string, SandboxInstanceRecord>()

  async get(key: string): Promise<SandboxInstanceRecord | null> {
    const record = this.records.get(key)
    return record ? { ...record } : null
  }

  async upsert(record: SandboxInstanceRecord): Promise<void> {
    this.records.set(record.key, { ...record })
  }

  async delete(key: string): Promise<void> {
    this.records.delete(key)
  }
}
