/**
 * The sandbox instance store: which provider sandbox (and snapshot) serves a
 * compound sandbox key, so `ensure` can resume it from any process. Owns the
 * contract, the in-memory default and the ambient capability; it knows
 * nothing about chat transcripts. Source: spec 003.
 */
import { createCapability } from '@tanstack/ai'

/** One sandbox instance, keyed by the compound sandbox key. */
export interface SandboxInstanceRecord {
  /** The compound key (see `computeSandboxKey`). */
  key: string
  /** Name of the provider that owns `providerSandboxId`. */
  provider: string
  /** The provider's sandbox id, passed to `provider.resume({ id })`. */
  providerSandboxId: string
  /** Latest provider snapshot for this key, when the provider has snapshots. */
  latestSnapshotId?: string
  /** Epoch ms when `latestSnapshotId` was taken (for `snapshotMaxAge`). */
  latestSnapshotAt?: number
  threadId: string
  latestRunId?: string
  /** Epoch ms of the last write. */
  updatedAt: number
}

/**
 * Maps a compound key to the sandbox to resume. Implement it over your own
 * database and prove it with `runSandboxInstanceStoreConformance` from
 * `@tanstack/ai-sandbox/testkit`. Records go in and come out as copies:
 * mutating an object passed to `upsert` or returned by `get` never changes
 * what is stored.
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

/**
 * The ambient instance store. `withSandbox(sandbox, { instances })` wins over
 * it; it wins over the in-memory fallback. Provide it from a platform
 * middleware with {@link provideSandboxInstanceStore}.
 */
export const SandboxInstanceStoreCapability = createCapability<SandboxInstanceStore>()('sandbox-instance-store')

/** Accessors of {@link SandboxInstanceStoreCapability}. */
export const [getSandboxInstanceStore, provideSandboxInstanceStore] = SandboxInstanceStoreCapability

/** In-memory {@link SandboxInstanceStore}: resume works within one process only. Records are copied in and out. */
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
