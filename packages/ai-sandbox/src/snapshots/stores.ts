/**
 * The storage contracts of portable snapshots (spec 000 "Portable sandbox
 * snapshots"): a thread's transcript (messages), its persisted artifacts,
 * content-addressed blobs with reference counts, and the checkpoint chain
 * with its head (compare-and-set append), its writer lease (owner token,
 * fence, renewal) and an optional atomic fork. One object, `stores`, carries
 * all four, because a fork copies a checkpoint and its conversation in one
 * transaction and so must see both. Implementations: the in-memory one here
 * (`./memory-persistence.ts`), SQLite and PostgreSQL in their packages, each
 * proven by `runSandboxCheckpointStoreConformance`.
 */
import type { ModelMessage } from '@tanstack/ai'
import { createHash } from 'node:crypto'
import { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'
import { parseOptions } from '../contracts/validate.js'
import { SandboxSnapshotError } from './errors.js'
import type { SandboxSnapshotManifest } from './manifest.js'

/** A persisted thread artifact (a report, an export) as a checkpoint lists it: its bytes are a blob. */
export interface SandboxArtifact {
  /** Unique within its thread, 1-200 characters, no `/` at either end (e.g. `reports/summary.md`). */
  readonly name: string
  /** The media type given at `put`, e.g. `text/markdown`. */
  readonly mediaType: string
  /** Bytes. */
  readonly size: number
  /** SHA-256 of the bytes (lowercase hex): the blob's key. */
  readonly sha256: string
  /** Epoch ms of the `put`. */
  readonly createdAt: number
}

/** Why a checkpoint was written: after a successful run, by `snapshots.save`, or as the first checkpoint of a fork. */
export type SandboxCheckpointKind = 'run' | 'save' | 'fork'

/**
 * One checkpoint of a thread: the workspace manifest, how much of the
 * transcript it covers, and the thread's artifacts at that moment. Blobs are
 * referenced by SHA-256 (the manifest's files and the artifacts); the store
 * counts one reference per checkpoint that names a blob.
 */
export interface SandboxCheckpoint {
  readonly threadId: string
  /** Unique per store (a UUID). */
  readonly checkpointId: string
  /** 1 for a thread's first checkpoint, then one more per append (assigned by the store). */
  readonly sequence: number
  /** The head this checkpoint was appended on (`null` for a thread's first). */
  readonly parentCheckpointId: string | null
  readonly kind: SandboxCheckpointKind
  /** The run that wrote it (`run`, `save`). */
  readonly runId?: string
  /** The label a `save` gave it. */
  readonly label?: string
  readonly manifest: SandboxSnapshotManifest
  /** `hashSandboxSnapshotManifest(manifest)`: a restore verifies it. */
  readonly manifestSha256: string
  /** The first `messageCount` messages of the thread's transcript belong to this checkpoint (a fork copies them). */
  readonly messageCount: number
  readonly artifacts: readonly SandboxArtifact[]
  /** The checkpoint a fork copied (`kind: 'fork'`). */
  readonly forkedFrom?: { readonly threadId: string; readonly checkpointId: string }
  /** Epoch ms. */
  readonly createdAt: number
}

/** A checkpoint as handed to `append`: the store assigns `sequence` and `parentCheckpointId`. */
export type SandboxCheckpointInput = Omit<SandboxCheckpoint, 'sequence' | 'parentCheckpointId'>

/** The writer lease of one thread (one writer of checkpoints at a time; spec 000). */
export interface SandboxCheckpointLease {
  readonly threadId: string
  /** Who holds it: withSandbox uses the run id, so a takeover of the same run can take the lease over. */
  readonly owner: string
  /** Random per acquisition; proves the holder. */
  readonly token: string
  /** Grows by one at every acquisition of the thread's lease: an older holder is fenced out. */
  readonly fence: number
  /** Epoch ms (store clock) after which another owner may take the lease. */
  readonly expiresAt: number
}

/** What `append` answers: the stored checkpoint, or why nothing was written. */
export type SandboxCheckpointAppendResult =
  | { readonly ok: true; readonly checkpoint: SandboxCheckpoint }
  /** `lease-lost`: the lease is not held by this token any more (expired and taken, released, fenced). `head-moved`: the head is not `expectedHead`. */
  | { readonly ok: false; readonly reason: 'lease-lost' | 'head-moved' }

/** What `forkFromCheckpoint` answers. */
export type SandboxCheckpointForkResult =
  | { readonly ok: true; readonly checkpoint: SandboxCheckpoint }
  /** `not-found`: no such checkpoint in `threadId`. `target-not-empty`: the destination has checkpoints, messages or artifacts. */
  | { readonly ok: false; readonly reason: 'not-found' | 'target-not-empty' }

/** A thread's transcript: an append-only list of messages. */
export interface SandboxMessageStore {
  /** Every message of the thread, oldest first; `[]` for an unknown thread. */
  list: (threadId: string) => Promise<ModelMessage[]>
  /**
   * Append `messages` when the thread holds exactly `expectedCount` messages
   * (compare-and-set); `false` (nothing written) when it holds another number.
   */
  append: (threadId: string, messages: readonly ModelMessage[], expectedCount: number) => Promise<boolean>
}

/** A thread's persisted artifacts; the bytes live in the blob store. */
export interface SandboxArtifactStore {
  /** Store the bytes as a blob and record (or replace) the thread's artifact `name`. */
  put: (threadId: string, input: { name: string; mediaType: string; bytes: Uint8Array }) => Promise<SandboxArtifact>
  /** The thread's current artifacts, by name. */
  list: (threadId: string) => Promise<SandboxArtifact[]>
}

/**
 * The grace period of blob retention: how old, in ms, a blob's last `put` must
 * be before `listUnreferenced` lists it or `delete` removes it.
 */
export interface SandboxBlobAgeOptions {
  /**
   * Only blobs whose last `put` is at least this many ms ago (the store's
   * clock). A non-negative finite number; default 0: every unreferenced blob.
   *
   * Why: a capture puts its blobs first and appends the checkpoint naming
   * them (which adds their references) only at the end, so until then they
   * look unreferenced. A cleanup that deletes them in that window makes the
   * append fail (`blob-missing`). Pick a value longer than your longest
   * capture or `snapshots.save`, e.g. one hour (`3_600_000`).
   */
  olderThanMs?: number
}

/** What `blobs.delete` did: removed it, or kept it because something references it, because it was put less than `olderThanMs` ago, or because there is no such blob. */
export type SandboxBlobDeleteResult = 'deleted' | 'referenced' | 'recent' | 'missing'

/** Content-addressed bytes, kept until deleted by hand (there is no automatic collection; spec 000). */
export interface SandboxBlobStore {
  /**
   * Store `bytes` under their SHA-256. A blob already there keeps its bytes
   * but its put time is renewed (now), so a capture that reuses a stored blob
   * restarts its grace period (see {@link SandboxBlobAgeOptions}). Bytes that
   * hash to something else are refused (`SandboxSnapshotError`
   * `blob-mismatch`), see `assertBlobMatches` in the internal entry.
   */
  put: (sha256: string, bytes: Uint8Array) => Promise<void>
  /** The bytes, or `null` when there is no such blob. */
  get: (sha256: string) => Promise<Uint8Array | null>
  /** How many checkpoints and current artifacts name the blob (0 for an unreferenced or unknown one). */
  references: (sha256: string) => Promise<number>
  /**
   * Blobs no checkpoint or artifact names (what a failed capture or a
   * replaced artifact leaves, but also the blobs of a capture still in
   * flight), for manual deletion, sorted. With `olderThanMs`, only those put
   * at least that many ms ago: pass the same grace to `delete`.
   * @throws SandboxConfigError `blobs.listUnreferenced.olderThanMs` for a negative, non-finite or non-number age.
   */
  listUnreferenced: (options?: SandboxBlobAgeOptions) => Promise<string[]>
  /**
   * Delete a blob nothing references and, with `olderThanMs`, put at least
   * that many ms ago. Answers `missing` when there is no such blob, else
   * `referenced` (kept) when something references it, else `recent` (kept)
   * when its last put is younger than `olderThanMs`, else `deleted`. The
   * checks and the deletion are atomic, so a capture that puts the blob again
   * between a listing and this call keeps it.
   * @throws SandboxConfigError `blobs.delete.olderThanMs` for a negative, non-finite or non-number age.
   */
  delete: (sha256: string, options?: SandboxBlobAgeOptions) => Promise<SandboxBlobDeleteResult>
}

/** The checkpoint chain of each thread, its head and its writer lease. */
export interface SandboxCheckpointStore {
  /** The thread's latest checkpoint, or `null`. */
  head: (threadId: string) => Promise<SandboxCheckpoint | null>
  /** One checkpoint of the thread, or `null` (also when it belongs to another thread). */
  get: (threadId: string, checkpointId: string) => Promise<SandboxCheckpoint | null>
  /** Every checkpoint of the thread, oldest first. */
  list: (threadId: string) => Promise<SandboxCheckpoint[]>
  /**
   * Take the thread's writer lease for `ttlMs`, or `null` while another owner
   * holds an unexpired one. The same owner (a takeover of the same run)
   * takes it over at once. Each acquisition gets a new token and fence.
   */
  acquireLease: (threadId: string, options: { owner: string; ttlMs: number }) => Promise<SandboxCheckpointLease | null>
  /** Extend a held lease by `ttlMs` from now, or `null` when it is not held by this token any more. */
  renewLease: (lease: SandboxCheckpointLease, ttlMs: number) => Promise<SandboxCheckpointLease | null>
  /** Give the lease up (no-op when it is not held by this token). */
  releaseLease: (lease: SandboxCheckpointLease) => Promise<void>
  /**
   * In one transaction: check the lease is held by `lease.token` and not
   * expired, check the head is `expectedHead` (a checkpoint id, or `null`
   * for none), store the checkpoint as the new head with the next sequence,
   * and add one reference to each blob it names. Every blob must be stored
   * first.
   */
  append: (input: { lease: SandboxCheckpointLease; expectedHead: string | null; checkpoint: SandboxCheckpointInput }) => Promise<SandboxCheckpointAppendResult>
  /**
   * Optional, atomic: copy checkpoint `checkpointId` of `threadId` to the
   * empty thread `targetThreadId` as its first checkpoint (`kind: 'fork'`,
   * the new id and time given), with the first `messageCount` messages of
   * the source transcript and the checkpoint's artifacts, adding the blob
   * references, all in one transaction. `snapshots.fork` needs it.
   */
  forkFromCheckpoint?: (input: { threadId: string; checkpointId: string; targetThreadId: string; newCheckpointId: string; createdAt: number }) => Promise<SandboxCheckpointForkResult>
}

/**
 * What portable snapshots persist, in one value handed to both
 * `withPersistence` and `createSandboxSnapshots` (spec 000: "the same
 * persistence value in both places").
 */
export interface SandboxSnapshotPersistence {
  readonly stores: {
    readonly messages: SandboxMessageStore
    readonly artifacts: SandboxArtifactStore
    readonly blobs: SandboxBlobStore
    readonly checkpoints: SandboxCheckpointStore
  }
}

const hasMethods = (names: readonly string[]) => (value: unknown) => typeof value === 'object' && value !== null && names.every((name) => typeof (value as Record<string, unknown>)[name] === 'function')

/** Validates a {@link SandboxSnapshotPersistence} (every store with its methods). */
export const snapshotPersistenceSchema = z.object(
  {
    stores: z.object(
      {
        messages: z.custom<SandboxMessageStore>(hasMethods(['list', 'append']), { message: 'expected a SandboxMessageStore (list, append)' }),
        artifacts: z.custom<SandboxArtifactStore>(hasMethods(['put', 'list']), { message: 'expected a SandboxArtifactStore (put, list)' }),
        blobs: z.custom<SandboxBlobStore>(hasMethods(['put', 'get', 'references', 'listUnreferenced', 'delete']), { message: 'expected a SandboxBlobStore (put, get, references, listUnreferenced, delete)' }),
        checkpoints: z.custom<SandboxCheckpointStore>(hasMethods(['head', 'get', 'list', 'acquireLease', 'renewLease', 'releaseLease', 'append']), { message: 'expected a SandboxCheckpointStore (head, get, list, acquireLease, renewLease, releaseLease, append; optional forkFromCheckpoint)' }),
      },
      { error: 'expected { messages, artifacts, blobs, checkpoints }' },
    ),
  },
  { error: 'expected a persistence value such as createInMemorySandboxPersistence() or createSqliteStores(...).snapshots' },
)

/**
 * Type a persistence value inline with contract checking, no annotation needed.
 * @example
 * ```ts
 * const persistence = defineSandboxSnapshotPersistence({ stores: { messages, artifacts, blobs, checkpoints } })
 * ```
 */
export function defineSandboxSnapshotPersistence(persistence: SandboxSnapshotPersistence): SandboxSnapshotPersistence {
  return persistence
}

/** The distinct blobs a checkpoint names (its files' and its artifacts'), sorted (a lock order for database stores). */
export function checkpointBlobs(checkpoint: Pick<SandboxCheckpoint, 'manifest' | 'artifacts'>): string[] {
  const blobs = new Set<string>()
  for (const entry of checkpoint.manifest.entries) if (entry.type === 'file') blobs.add(entry.sha256)
  for (const artifact of checkpoint.artifacts) blobs.add(artifact.sha256)
  return [...blobs].sort()
}

/** The rule for artifact names: 1-200 characters, no NUL, no `/` at either end. */
const ARTIFACT_NAME = /^(?!\/)(?!.*\/$)[^\0]{1,200}$/

/**
 * Check an artifact name as `artifacts.put` of every bundled store does.
 * @throws SandboxConfigError `artifacts.put.name` naming the rule.
 */
export function assertArtifactName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !ARTIFACT_NAME.test(name)) throw new SandboxConfigError('artifacts.put.name', `Invalid option artifacts.put.name: ${JSON.stringify(name)}; use 1-200 characters with no NUL and no "/" at either end, e.g. "reports/summary.md".`)
}

const blobAgeOptionsSchema = z
  .object({
    olderThanMs: z.number('expected an age in ms as a finite number, e.g. 3600000 (one hour)').min(0, 'expected 0 ms or more, e.g. 3600000 (one hour)').optional(),
  })
  .strict()

/**
 * Check the options of `blobs.listUnreferenced` or `blobs.delete`, as every
 * bundled store does, and give the grace period they ask for.
 * @param options - What the caller passed (`undefined` for none).
 * @param method - `blobs.listUnreferenced` or `blobs.delete`, the prefix of the field an error names.
 * @returns `olderThanMs`, 0 when absent.
 * @throws SandboxConfigError `<method>.olderThanMs` for a negative, non-finite or non-number age; `<method>.<key>` for an unknown key.
 */
export function parseBlobAgeOptions(options: unknown, method: 'blobs.listUnreferenced' | 'blobs.delete'): number {
  return parseOptions(blobAgeOptionsSchema, options === undefined ? {} : options, method).olderThanMs ?? 0
}

/** The error of an `append` naming a blob that is not stored (nothing is written). */
export function blobMissingForAppend(sha256: string, checkpoint: Pick<SandboxCheckpoint, 'checkpointId' | 'threadId'>): SandboxSnapshotError {
  return new SandboxSnapshotError('blob-missing', `checkpoints.append: blob ${sha256} of checkpoint ${checkpoint.checkpointId} (thread ${JSON.stringify(checkpoint.threadId)}) is not stored; put every blob before the checkpoint. Nothing was written.`)
}

/**
 * Check that `bytes` are the blob `sha256` names (lowercase hex SHA-256), as
 * `blobs.put` of every bundled store does: a store never keeps bytes under
 * another content's name, so a checkpoint that reuses a stored blob can trust it.
 * @throws SandboxConfigError `blobs.put.sha256` for a key that is not 64 lowercase hex digits.
 * @throws SandboxSnapshotError `blob-mismatch` when the bytes hash to something else (nothing is stored).
 */
export function assertBlobMatches(sha256: unknown, bytes: Uint8Array): asserts sha256 is string {
  if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) throw new SandboxConfigError('blobs.put.sha256', `Invalid option blobs.put.sha256: ${JSON.stringify(sha256)}; expected the blob's SHA-256 as 64 lowercase hex digits.`)
  if (!(bytes instanceof Uint8Array)) throw new SandboxConfigError('blobs.put.bytes', 'Invalid option blobs.put.bytes: expected a Uint8Array.')
  const actual = createHash('sha256').update(bytes).digest('hex')
  if (actual !== sha256) throw new SandboxSnapshotError('blob-mismatch', `blobs.put: the ${bytes.length} bytes given hash to ${actual}, not ${sha256}; a blob is stored only under its own SHA-256. Nothing was stored.`)
}
