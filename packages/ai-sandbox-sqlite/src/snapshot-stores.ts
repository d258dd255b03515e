/**
 * The portable-snapshot persistence (`SandboxSnapshotPersistence` of
 * `@tanstack/ai-sandbox`) over the `snapshot_*` tables: transcripts,
 * artifacts, content-addressed blobs with reference counts, and the
 * checkpoint chain with its head, writer lease and fork. Invariant: every
 * write that touches more than one row (a checkpoint append, a fork, an
 * artifact put, a lease change, a blob deletion) is one `BEGIN IMMEDIATE`
 * transaction, so processes sharing the file serialize and a failure leaves
 * nothing half-written. Design notes: docs/design/stores.md
 */
import { createHash, randomUUID } from 'node:crypto'
import type { ModelMessage } from '@tanstack/ai'
import {
  type SandboxArtifact,
  type SandboxBlobDeleteResult,
  type SandboxCheckpoint,
  type SandboxCheckpointAppendResult,
  type SandboxCheckpointForkResult,
  type SandboxCheckpointInput,
  type SandboxCheckpointLease,
  type SandboxCheckpointStore,
  type SandboxSnapshotPersistence,
} from '@tanstack/ai-sandbox'
import { assertArtifactName, assertBlobMatches, blobMissingForAppend, checkpointBlobs, checkpointFromRow, checkpointToRow, parseBlobAgeOptions, type CheckpointRow } from '@tanstack/ai-sandbox/internal'
import { assertOpen, type SqliteDatabase } from './database.js'
import { SqliteDatabaseError } from './errors.js'

type ForkInput = Parameters<NonNullable<SandboxCheckpointStore['forkFromCheckpoint']>>[0]

interface ArtifactRow {
  name: string
  media_type: string
  size: number
  sha256: string
  created_at: number
}

interface LeaseRow {
  fence: number
  owner: string | null
  token: string | null
  expires_at: number | null
}

/** A stored row as the contract's record (an unknown kind is a corrupt row). */
const fromRow = (db: SqliteDatabase, row: CheckpointRow): SandboxCheckpoint => checkpointFromRow(row, (message) => new SqliteDatabaseError('corrupt-row', db.name, message))

/** JavaScript string order, as the in-memory store sorts (SQLite's BINARY collation orders UTF-8 bytes, which differs past U+FFFF). */
const byName = (a: SandboxArtifact, b: SandboxArtifact): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
const artifactOf = (row: ArtifactRow): SandboxArtifact => ({ name: row.name, mediaType: row.media_type, size: row.size, sha256: row.sha256, createdAt: row.created_at })
/** better-sqlite3 binds a Buffer, not a bare Uint8Array: a view over the same bytes. */
const bufferOf = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/**
 * The portable-snapshot persistence of `createSqliteStores` (`stores.snapshots`),
 * over a connection from `openSqliteDatabase`: hand the same value to
 * `withPersistence` and `createSandboxSnapshots`. Follows the in-memory
 * reference (`createInMemorySandboxPersistence`) exactly; the checkpoint store
 * has `forkFromCheckpoint`.
 *
 * Transactions: `checkpoints.append` (lease held and unexpired, head equal to
 * `expectedHead`, every named blob stored, the row inserted with the next
 * sequence, one reference added per distinct blob) and `forkFromCheckpoint`
 * (the copied checkpoint, its blob references, the transcript prefix and the
 * artifacts) each run in one `BEGIN IMMEDIATE` transaction, as do lease
 * acquisition, renewal and release, `messages.append` (compare-and-set on the
 * count), `artifacts.put` and `blobs.delete` (existence, references and
 * age checked where the row is deleted). A throw inside rolls everything back.
 *
 * Clock: `Date.now()` of the calling process (epoch ms), for lease expiry
 * (`expiresAt`), an artifact's `createdAt` and a blob's put time (`put_at`,
 * renewed by every put, the age `olderThanMs` measures), as the package's
 * lock store: processes sharing the file share the host's clock.
 *
 * Storage: a message is one row of JSON text; a checkpoint's manifest and
 * artifacts are JSON text, its optional `runId`, `label`, `forkedFrom` are
 * NULL when absent (and absent again when read); blob bytes are a `BLOB`.
 *
 * @param db - An open database from `openSqliteDatabase` (schema version 2 or later).
 * @returns `{ stores: { messages, artifacts, blobs, checkpoints } }`.
 * @throws SqliteDatabaseError `closed` from any call after the database was closed; `corrupt-row` when a checkpoint row holds an unknown kind.
 * @throws SandboxConfigError `artifacts.put.name` for an invalid artifact name; `blobs.listUnreferenced.olderThanMs` or `blobs.delete.olderThanMs` for an invalid age.
 * @throws SandboxSnapshotError `blob-missing` from `checkpoints.append` when a blob the checkpoint names is not stored (nothing is written).
 * @example
 * ```ts
 * const stores = createSqliteStores({ path: './agent-runs.db' })
 * const snapshots = createSandboxSnapshots({ persistence: stores.snapshots, sandbox, instances: stores.instances })
 * chat({ adapter, threadId, messages, middleware: [withPersistence(stores.snapshots), withSandbox(sandbox, { snapshots })] })
 * ```
 */
export function sqliteSnapshotPersistence(db: SqliteDatabase): SandboxSnapshotPersistence {
  const q = {
    messages: db.prepare<[string], { message: string }>('SELECT message FROM snapshot_messages WHERE thread_id = ? ORDER BY seq'),
    messageCount: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM snapshot_messages WHERE thread_id = ?'),
    insertMessage: db.prepare<[string, number, string]>('INSERT INTO snapshot_messages (thread_id, seq, message) VALUES (?, ?, ?)'),
    copyMessages: db.prepare<[string, string, number]>('INSERT INTO snapshot_messages (thread_id, seq, message) SELECT ?, seq, message FROM snapshot_messages WHERE thread_id = ? AND seq < ?'),
    artifacts: db.prepare<[string], ArtifactRow>('SELECT name, media_type, size, sha256, created_at FROM snapshot_artifacts WHERE thread_id = ? ORDER BY name'),
    artifactCount: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM snapshot_artifacts WHERE thread_id = ?'),
    putArtifact: db.prepare<[string, string, string, number, string, number]>('INSERT OR REPLACE INTO snapshot_artifacts (thread_id, name, media_type, size, sha256, created_at) VALUES (?, ?, ?, ?, ?, ?)'),
    // A blob already stored keeps its bytes; its put time is renewed (never moved back by a process whose clock is behind).
    putBlob: db.prepare<[string, Buffer, number]>('INSERT INTO snapshot_blobs (sha256, bytes, put_at) VALUES (?, ?, ?) ON CONFLICT (sha256) DO UPDATE SET put_at = max(put_at, excluded.put_at)'),
    blob: db.prepare<[string], { bytes: Buffer }>('SELECT bytes FROM snapshot_blobs WHERE sha256 = ?'),
    blobExists: db.prepare<[string], { one: number }>('SELECT 1 AS one FROM snapshot_blobs WHERE sha256 = ?'),
    blobPutAt: db.prepare<[string], { put_at: number }>('SELECT put_at FROM snapshot_blobs WHERE sha256 = ?'),
    references: db.prepare<[string, string], { n: number }>('SELECT coalesce((SELECT checkpoint_refs FROM snapshot_blobs WHERE sha256 = ?), 0) + (SELECT count(*) FROM snapshot_artifacts WHERE sha256 = ?) AS n'),
    unreferenced: db.prepare<[number], { sha256: string }>('SELECT sha256 FROM snapshot_blobs b WHERE checkpoint_refs = 0 AND put_at <= ? AND NOT EXISTS (SELECT 1 FROM snapshot_artifacts a WHERE a.sha256 = b.sha256) ORDER BY sha256'),
    deleteBlob: db.prepare<[string]>('DELETE FROM snapshot_blobs WHERE sha256 = ?'),
    addRef: db.prepare<[string]>('UPDATE snapshot_blobs SET checkpoint_refs = checkpoint_refs + 1 WHERE sha256 = ?'),
    head: db.prepare<[string], CheckpointRow>('SELECT * FROM snapshot_checkpoints WHERE thread_id = ? ORDER BY sequence DESC LIMIT 1'),
    checkpoint: db.prepare<[string, string], CheckpointRow>('SELECT * FROM snapshot_checkpoints WHERE thread_id = ? AND checkpoint_id = ?'),
    chain: db.prepare<[string], CheckpointRow>('SELECT * FROM snapshot_checkpoints WHERE thread_id = ? ORDER BY sequence'),
    checkpointCount: db.prepare<[string], { n: number }>('SELECT count(*) AS n FROM snapshot_checkpoints WHERE thread_id = ?'),
    insertCheckpoint: db.prepare<[CheckpointRow]>(
      `INSERT INTO snapshot_checkpoints (thread_id, sequence, checkpoint_id, parent_checkpoint_id, kind, run_id, label, manifest, manifest_sha256, message_count, artifacts, forked_from_thread_id, forked_from_checkpoint_id, created_at)
       VALUES (@thread_id, @sequence, @checkpoint_id, @parent_checkpoint_id, @kind, @run_id, @label, @manifest, @manifest_sha256, @message_count, @artifacts, @forked_from_thread_id, @forked_from_checkpoint_id, @created_at)`,
    ),
    lease: db.prepare<[string], LeaseRow>('SELECT fence, owner, token, expires_at FROM snapshot_leases WHERE thread_id = ?'),
    takeLease: db.prepare<[string, number, string, string, number]>('INSERT OR REPLACE INTO snapshot_leases (thread_id, fence, owner, token, expires_at) VALUES (?, ?, ?, ?, ?)'),
    renewLease: db.prepare<[number, string, string, number]>('UPDATE snapshot_leases SET expires_at = ? WHERE thread_id = ? AND token = ? AND expires_at > ?'),
    releaseLease: db.prepare<[string, string]>('UPDATE snapshot_leases SET owner = NULL, token = NULL, expires_at = NULL WHERE thread_id = ? AND token = ?'),
  }

  /** Run `fn` in one `BEGIN IMMEDIATE` transaction (the write lock first, so processes serialize instead of failing to upgrade). */
  const atomically = <A extends unknown[], R>(fn: (...args: A) => R) => {
    const tx = db.transaction(fn)
    return (...args: A): R => {
      assertOpen(db)
      return tx.immediate(...args)
    }
  }
  const held = (lease: SandboxCheckpointLease, now: number): boolean => {
    const row = q.lease.get(lease.threadId)
    return row !== undefined && row.token === lease.token && row.expires_at !== null && row.expires_at > now
  }
  const addRefs = (checkpoint: SandboxCheckpoint): void => {
    for (const sha of checkpointBlobs(checkpoint)) q.addRef.run(sha)
  }
  const read = <T>(fn: () => T): T => {
    assertOpen(db)
    return fn()
  }

  const acquire = atomically((threadId: string, owner: string, ttlMs: number): SandboxCheckpointLease | null => {
    const now = Date.now()
    const row = q.lease.get(threadId)
    if (row !== undefined && row.token !== null && row.owner !== owner && row.expires_at !== null && row.expires_at > now) return null
    const lease: SandboxCheckpointLease = { threadId, owner, token: randomUUID(), fence: (row?.fence ?? 0) + 1, expiresAt: now + ttlMs }
    q.takeLease.run(threadId, lease.fence, owner, lease.token, lease.expiresAt)
    return lease
  })
  const renew = atomically((lease: SandboxCheckpointLease, ttlMs: number): SandboxCheckpointLease | null => {
    const now = Date.now()
    const expiresAt = now + ttlMs
    if (q.renewLease.run(expiresAt, lease.threadId, lease.token, now).changes !== 1) return null
    return { threadId: lease.threadId, owner: lease.owner, token: lease.token, fence: lease.fence, expiresAt }
  })
  const release = atomically((lease: SandboxCheckpointLease): void => void q.releaseLease.run(lease.threadId, lease.token))

  const append = atomically(({ lease, expectedHead, checkpoint }: { lease: SandboxCheckpointLease; expectedHead: string | null; checkpoint: SandboxCheckpointInput }): SandboxCheckpointAppendResult => {
    if (lease.threadId !== checkpoint.threadId || !held(lease, Date.now())) return { ok: false, reason: 'lease-lost' }
    const head = q.head.get(checkpoint.threadId)
    if ((head?.checkpoint_id ?? null) !== expectedHead) return { ok: false, reason: 'head-moved' }
    for (const sha of checkpointBlobs(checkpoint)) {
      if (q.blobExists.get(sha) === undefined) {
        throw blobMissingForAppend(sha, checkpoint)
      }
    }
    const row = checkpointToRow({ ...checkpoint, sequence: (head?.sequence ?? 0) + 1, parentCheckpointId: head?.checkpoint_id ?? null })
    q.insertCheckpoint.run(row)
    const stored = fromRow(db, row)
    addRefs(stored)
    return { ok: true, checkpoint: stored }
  })

  const fork = atomically(({ threadId, checkpointId, targetThreadId, newCheckpointId, createdAt }: ForkInput): SandboxCheckpointForkResult => {
    const source = q.checkpoint.get(threadId, checkpointId)
    if (source === undefined) return { ok: false, reason: 'not-found' }
    if (q.checkpointCount.get(targetThreadId)!.n > 0 || q.messageCount.get(targetThreadId)!.n > 0 || q.artifactCount.get(targetThreadId)!.n > 0) return { ok: false, reason: 'target-not-empty' }
    const copy = fromRow(db, {
      ...source,
      thread_id: targetThreadId,
      checkpoint_id: newCheckpointId,
      sequence: 1,
      parent_checkpoint_id: null,
      kind: 'fork',
      forked_from_thread_id: threadId,
      forked_from_checkpoint_id: checkpointId,
      created_at: createdAt,
    })
    q.insertCheckpoint.run(checkpointToRow(copy))
    addRefs(copy)
    q.copyMessages.run(targetThreadId, threadId, copy.messageCount)
    for (const a of copy.artifacts) q.putArtifact.run(targetThreadId, a.name, a.mediaType, a.size, a.sha256, a.createdAt)
    return { ok: true, checkpoint: copy }
  })

  const appendMessages = atomically((threadId: string, messages: readonly ModelMessage[], expectedCount: number): boolean => {
    if (q.messageCount.get(threadId)!.n !== expectedCount) return false
    messages.forEach((message, i) => q.insertMessage.run(threadId, expectedCount + i, JSON.stringify(message)))
    return true
  })

  const putArtifact = atomically((threadId: string, name: string, mediaType: string, bytes: Uint8Array): SandboxArtifact => {
    const artifact: SandboxArtifact = { name, mediaType, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), createdAt: Date.now() }
    q.putBlob.run(artifact.sha256, bufferOf(bytes), artifact.createdAt)
    q.putArtifact.run(threadId, name, mediaType, artifact.size, artifact.sha256, artifact.createdAt)
    return artifact
  })

  /** In the transaction that deletes, so a put that renews the blob either lands first (and is seen) or after (and stores it again). */
  const deleteBlob = atomically((sha256: string, olderThanMs: number): SandboxBlobDeleteResult => {
    const row = q.blobPutAt.get(sha256)
    if (row === undefined) return 'missing'
    if (q.references.get(sha256, sha256)!.n > 0) return 'referenced'
    if (olderThanMs > 0 && Date.now() - row.put_at < olderThanMs) return 'recent'
    q.deleteBlob.run(sha256)
    return 'deleted'
  })

  const checkpoints: SandboxCheckpointStore = {
    head: async (threadId) => read(() => {
      const row = q.head.get(threadId)
      return row === undefined ? null : fromRow(db, row)
    }),
    get: async (threadId, checkpointId) => read(() => {
      const row = q.checkpoint.get(threadId, checkpointId)
      return row === undefined ? null : fromRow(db, row)
    }),
    list: async (threadId) => read(() => q.chain.all(threadId).map((row) => fromRow(db, row))),
    acquireLease: async (threadId, { owner, ttlMs }) => acquire(threadId, owner, ttlMs),
    renewLease: async (lease, ttlMs) => renew(lease, ttlMs),
    releaseLease: async (lease) => release(lease),
    append: async (input) => append(input),
    forkFromCheckpoint: async (input) => fork(input),
  }

  return {
    stores: {
      messages: {
        list: async (threadId) => read(() => q.messages.all(threadId).map((row) => JSON.parse(row.message) as ModelMessage)),
        append: async (threadId, messages, expectedCount) => appendMessages(threadId, messages, expectedCount),
      },
      artifacts: {
        put: async (threadId, { name, mediaType, bytes }) => {
          assertArtifactName(name)
          return putArtifact(threadId, name, mediaType, bytes)
        },
        list: async (threadId) => read(() => q.artifacts.all(threadId).map(artifactOf).sort(byName)),
      },
      blobs: {
        put: async (sha256, bytes) => {
          assertBlobMatches(sha256, bytes)
          return read(() => void q.putBlob.run(sha256, bufferOf(bytes), Date.now()))
        },
        get: async (sha256) => read(() => {
          const row = q.blob.get(sha256)
          return row === undefined ? null : new Uint8Array(row.bytes)
        }),
        references: async (sha256) => read(() => q.references.get(sha256, sha256)!.n),
        listUnreferenced: async (options) => {
          const olderThanMs = parseBlobAgeOptions(options, 'blobs.listUnreferenced')
          // 0 lists every unreferenced blob, whatever the put times (a process whose clock ran ahead included).
          const putBefore = olderThanMs === 0 ? Number.MAX_SAFE_INTEGER : Date.now() - olderThanMs
          return read(() => q.unreferenced.all(putBefore).map((row) => row.sha256))
        },
        delete: async (sha256, options) => deleteBlob(sha256, parseBlobAgeOptions(options, 'blobs.delete')),
      },
      checkpoints,
    },
  }
}
