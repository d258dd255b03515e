/**
 * The portable-snapshot persistence (`SandboxSnapshotPersistence` of
 * `@tanstack/ai-sandbox`) over the `snapshot_*` tables: transcripts,
 * artifacts, content-addressed blobs with reference counts, and the
 * checkpoint chain with its head, writer lease and fork. Invariant: every
 * write that touches a thread runs in one transaction on one checked-out
 * connection under that thread's advisory lock, and locks the blob rows it
 * references in SHA-256 order, so racing writers serialize (never deadlock)
 * and a failure leaves nothing half-written. Design notes: docs/design/stores.md
 */
import { createHash, randomUUID } from 'node:crypto'
import type { ModelMessage } from '@tanstack/ai'
import {
  type SandboxArtifact,
  type SandboxBlobDeleteResult,
  type SandboxCheckpoint,
  type SandboxCheckpointLease,
  type SandboxCheckpointStore,
  type SandboxSnapshotPersistence,
} from '@tanstack/ai-sandbox'
import { assertArtifactName, assertBlobMatches, blobMissingForAppend, checkpointBlobs, checkpointFromRow, checkpointToRow, parseBlobAgeOptions, type CheckpointRow } from '@tanstack/ai-sandbox/internal'
import { contextOf, query, transaction, type PostgresClient, type PostgresContext, type PostgresPool, type PostgresSchemaOptions } from './database.js'
import { PostgresDatabaseError } from './errors.js'

/** Epoch ms of the database clock (the lease's clock, as the lock store's). */
const NOW_MS = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::double precision'
/** A blob's put time: the database clock, as an artifact's `createdAt`. */
const PUT_AT = `(${NOW_MS})::bigint`

const COLUMNS = ['thread_id', 'sequence', 'checkpoint_id', 'parent_checkpoint_id', 'kind', 'run_id', 'label', 'manifest', 'manifest_sha256', 'message_count', 'artifacts', 'forked_from_thread_id', 'forked_from_checkpoint_id', 'created_at'] as const

interface ArtifactRow {
  name: string
  media_type: string
  size: string
  sha256: string
  created_at: number
}

type ForkInput = Parameters<NonNullable<SandboxCheckpointStore['forkFromCheckpoint']>>[0]

/**
 * The portable-snapshot persistence over a pool whose schema was migrated
 * (`migratePostgres`), as `createPostgresStores(...).snapshots`: hand the same
 * value to `withPersistence` and `createSandboxSnapshots`. Follows the
 * in-memory reference (`createInMemorySandboxPersistence`) exactly; the
 * checkpoint store has `forkFromCheckpoint`.
 *
 * Transactions (one checked-out connection each, `BEGIN` … `COMMIT`, rolled
 * back on any throw): `checkpoints.append` takes the thread's advisory lock
 * (`pg_advisory_xact_lock`), checks the lease token and expiry and the head,
 * locks the named blob rows (`FOR UPDATE`, sorted), refuses a missing one,
 * inserts the checkpoint with the next sequence and adds one reference per
 * distinct blob; `forkFromCheckpoint` does the same under the target thread's
 * lock, with the transcript prefix and the artifacts. Lease acquisition,
 * renewal and release, `messages.append` (compare-and-set on the count) and
 * `artifacts.put` also hold the thread's lock, so racing calls have exactly
 * one winner; `blobs.delete` locks the blob row before counting references and
 * reading its put time, and a put renews that time under the same row lock, so
 * a delete never removes a blob a racing capture just put.
 *
 * Clock: the database's (`clock_timestamp()`, epoch ms) for lease expiry
 * (`expiresAt`), an artifact's `createdAt` and a blob's put time (`put_at`,
 * renewed by every put, the age `olderThanMs` measures), so no process's
 * clock is trusted.
 *
 * Storage: a message is one row of JSON text; a checkpoint's manifest and
 * artifacts are JSON text (read back exactly as written); its optional
 * `runId`, `label`, `forkedFrom` are NULL when absent (and absent again when
 * read); blob bytes are `bytea`.
 *
 * @param pool - A node-postgres `Pool` whose schema was migrated (schema version 2 or later).
 * @param options - `schema` (default `tanstack_sandbox`).
 * @returns `{ stores: { messages, artifacts, blobs, checkpoints } }`.
 * @throws SandboxConfigError naming `postgresSnapshotPersistence.schema` for an invalid schema name; `artifacts.put.name` for an invalid artifact name; `blobs.listUnreferenced.olderThanMs` or `blobs.delete.olderThanMs` for an invalid age.
 * @throws SandboxSnapshotError `blob-missing` from `checkpoints.append` when a blob the checkpoint names is not stored (nothing is written).
 * @throws PostgresDatabaseError from any call: `closed`, `schema-missing`, `connect-failed`, `query-failed`; `corrupt-row` when a checkpoint row holds an unknown kind.
 * @example
 * ```ts
 * const stores = await createPostgresStores({ connectionString: process.env.DATABASE_URL! })
 * const snapshots = createSandboxSnapshots({ persistence: stores.snapshots, sandbox, instances: stores.instances })
 * chat({ adapter, threadId, messages, middleware: [withPersistence(stores.snapshots), withSandbox(sandbox, { snapshots })] })
 * ```
 */
export function postgresSnapshotPersistence(pool: PostgresPool, options: PostgresSchemaOptions = {}): SandboxSnapshotPersistence {
  return snapshotPersistenceOf(contextOf(pool, options.schema, 'postgresSnapshotPersistence'))
}

/** The snapshot persistence over a context. Internal. */
export function snapshotPersistenceOf(ctx: PostgresContext): SandboxSnapshotPersistence {
  const s = `"${ctx.tables.schema}"`
  const T = { messages: `${s}.snapshot_messages`, blobs: `${s}.snapshot_blobs`, artifacts: `${s}.snapshot_artifacts`, checkpoints: `${s}.snapshot_checkpoints`, leases: `${s}.snapshot_leases` }

  const fromRow = (row: CheckpointRow): SandboxCheckpoint => checkpointFromRow(row, (message) => new PostgresDatabaseError('corrupt-row', ctx.tables.schema, message))
  /** The thread's advisory lock, held to the end of the transaction (64-bit hash of schema and thread: a collision only serializes two threads). */
  const lockThread = (client: PostgresClient, threadId: string) => client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`@tanstack/ai-sandbox-postgres:snapshot:${ctx.tables.schema}:${threadId}`])
  const count = async (client: PostgresClient, table: string, threadId: string): Promise<number> => (await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE thread_id = $1`, [threadId])).rows[0]!.n
  const insert = async (client: PostgresClient, row: CheckpointRow): Promise<void> => {
    await client.query(`INSERT INTO ${T.checkpoints} (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})`, COLUMNS.map((column) => row[column]))
  }
  /** Lock the checkpoint's blob rows in order, refuse a missing one, add one reference to each. */
  const addRefs = async (client: PostgresClient, checkpoint: SandboxCheckpoint): Promise<void> => {
    const blobs = checkpointBlobs(checkpoint)
    if (blobs.length === 0) return
    const { rows } = await client.query<{ sha256: string }>(`SELECT sha256 FROM ${T.blobs} WHERE sha256 = ANY($1::text[]) ORDER BY sha256 FOR UPDATE`, [blobs])
    const found = new Set(rows.map((row) => row.sha256))
    const missing = blobs.find((sha) => !found.has(sha))
    if (missing !== undefined) {
      throw blobMissingForAppend(missing, checkpoint)
    }
    await client.query(`UPDATE ${T.blobs} SET checkpoint_refs = checkpoint_refs + 1 WHERE sha256 = ANY($1::text[])`, [blobs])
  }
  const leaseOf = (row: { thread_id: string; owner: string; token: string; fence: string; expires_at: number }): SandboxCheckpointLease => ({ threadId: row.thread_id, owner: row.owner, token: row.token, fence: Number(row.fence), expiresAt: row.expires_at })
  const artifactOf = (row: ArtifactRow): SandboxArtifact => ({ name: row.name, mediaType: row.media_type, size: Number(row.size), sha256: row.sha256, createdAt: row.created_at })
  const one = async (text: string, values: unknown[]): Promise<SandboxCheckpoint | null> => {
    const row = (await query<CheckpointRow>(ctx, text, values)).rows[0]
    return row === undefined ? null : fromRow(row)
  }
  /** On a put of a stored blob: renew its put time (never backwards), keep its bytes. */
  const RENEW_PUT_AT = `put_at = GREATEST(${T.blobs}.put_at, EXCLUDED.put_at)`
  const references = `coalesce((SELECT checkpoint_refs FROM ${T.blobs} WHERE sha256 = $1), 0) + (SELECT count(*) FROM ${T.artifacts} WHERE sha256 = $1)`

  const checkpoints: SandboxCheckpointStore = {
    head: async (threadId) => one(`SELECT * FROM ${T.checkpoints} WHERE thread_id = $1 ORDER BY sequence DESC LIMIT 1`, [threadId]),
    get: async (threadId, checkpointId) => one(`SELECT * FROM ${T.checkpoints} WHERE thread_id = $1 AND checkpoint_id = $2`, [threadId, checkpointId]),
    list: async (threadId) => (await query<CheckpointRow>(ctx, `SELECT * FROM ${T.checkpoints} WHERE thread_id = $1 ORDER BY sequence`, [threadId])).rows.map(fromRow),
    acquireLease: (threadId, { owner, ttlMs }) =>
      transaction(ctx, async (client) => {
        await lockThread(client, threadId)
        const current = (await client.query<{ fence: string; owner: string | null; live: boolean }>(`SELECT fence, owner, token IS NOT NULL AND expires_at > ${NOW_MS} AS live FROM ${T.leases} WHERE thread_id = $1`, [threadId])).rows[0]
        if (current?.live === true && current.owner !== owner) return null
        const { rows } = await client.query(
          `INSERT INTO ${T.leases} (thread_id, fence, owner, token, expires_at) VALUES ($1, $2, $3, $4, ${NOW_MS} + $5)
           ON CONFLICT (thread_id) DO UPDATE SET fence = EXCLUDED.fence, owner = EXCLUDED.owner, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
           RETURNING thread_id, owner, token, fence, expires_at`,
          [threadId, Number(current?.fence ?? 0) + 1, owner, randomUUID(), ttlMs],
        )
        return leaseOf(rows[0])
      }),
    renewLease: (lease, ttlMs) =>
      transaction(ctx, async (client) => {
        await lockThread(client, lease.threadId)
        const { rows } = await client.query(
          `UPDATE ${T.leases} SET expires_at = ${NOW_MS} + $3 WHERE thread_id = $1 AND token = $2 AND expires_at > ${NOW_MS} RETURNING thread_id, owner, token, fence, expires_at`,
          [lease.threadId, lease.token, ttlMs],
        )
        return rows[0] === undefined ? null : leaseOf(rows[0])
      }),
    releaseLease: (lease) =>
      transaction(ctx, async (client) => {
        await lockThread(client, lease.threadId)
        await client.query(`UPDATE ${T.leases} SET owner = NULL, token = NULL, expires_at = NULL WHERE thread_id = $1 AND token = $2`, [lease.threadId, lease.token])
      }),
    append: ({ lease, expectedHead, checkpoint }) =>
      transaction(ctx, async (client) => {
        if (lease.threadId !== checkpoint.threadId) return { ok: false, reason: 'lease-lost' }
        await lockThread(client, checkpoint.threadId)
        const held = await client.query(`SELECT 1 FROM ${T.leases} WHERE thread_id = $1 AND token = $2 AND expires_at > ${NOW_MS}`, [lease.threadId, lease.token])
        if (held.rowCount !== 1) return { ok: false, reason: 'lease-lost' }
        const head = (await client.query<{ checkpoint_id: string; sequence: number }>(`SELECT checkpoint_id, sequence FROM ${T.checkpoints} WHERE thread_id = $1 ORDER BY sequence DESC LIMIT 1`, [checkpoint.threadId])).rows[0]
        if ((head?.checkpoint_id ?? null) !== expectedHead) return { ok: false, reason: 'head-moved' }
        const row = checkpointToRow({ ...checkpoint, sequence: (head?.sequence ?? 0) + 1, parentCheckpointId: head?.checkpoint_id ?? null })
        await insert(client, row)
        // The answer is the row read back: exactly what is stored, and no object of the caller's.
        const stored = fromRow(row)
        await addRefs(client, stored)
        return { ok: true, checkpoint: stored }
      }),
    forkFromCheckpoint: ({ threadId, checkpointId, targetThreadId, newCheckpointId, createdAt }: ForkInput) =>
      transaction(ctx, async (client) => {
        await lockThread(client, targetThreadId)
        const source = (await client.query<CheckpointRow>(`SELECT * FROM ${T.checkpoints} WHERE thread_id = $1 AND checkpoint_id = $2`, [threadId, checkpointId])).rows[0]
        if (source === undefined) return { ok: false, reason: 'not-found' }
        if ((await count(client, T.checkpoints, targetThreadId)) > 0 || (await count(client, T.messages, targetThreadId)) > 0 || (await count(client, T.artifacts, targetThreadId)) > 0) return { ok: false, reason: 'target-not-empty' }
        const copy: SandboxCheckpoint = { ...fromRow(source), threadId: targetThreadId, checkpointId: newCheckpointId, sequence: 1, parentCheckpointId: null, kind: 'fork', forkedFrom: { threadId, checkpointId }, createdAt }
        await insert(client, checkpointToRow(copy))
        await addRefs(client, copy)
        await client.query(`INSERT INTO ${T.messages} (thread_id, seq, message) SELECT $1, seq, message FROM ${T.messages} WHERE thread_id = $2 AND seq < $3`, [targetThreadId, threadId, copy.messageCount])
        const a = copy.artifacts
        await client.query(
          `INSERT INTO ${T.artifacts} (thread_id, name, media_type, size, sha256, created_at) SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::double precision[])`,
          [targetThreadId, a.map((x) => x.name), a.map((x) => x.mediaType), a.map((x) => x.size), a.map((x) => x.sha256), a.map((x) => x.createdAt)],
        )
        return { ok: true, checkpoint: copy }
      }),
  }

  return {
    stores: {
      messages: {
        list: async (threadId) => (await query<{ message: string }>(ctx, `SELECT message FROM ${T.messages} WHERE thread_id = $1 ORDER BY seq`, [threadId])).rows.map((row) => JSON.parse(row.message) as ModelMessage),
        append: (threadId, messages, expectedCount) =>
          transaction(ctx, async (client) => {
            await lockThread(client, threadId)
            if ((await count(client, T.messages, threadId)) !== expectedCount) return false
            await client.query(`INSERT INTO ${T.messages} (thread_id, seq, message) SELECT $1, $2::int + i - 1, m FROM unnest($3::text[]) WITH ORDINALITY AS x(m, i)`, [threadId, expectedCount, messages.map((m) => JSON.stringify(m))])
            return true
          }),
      },
      artifacts: {
        put: async (threadId, { name, mediaType, bytes }) => {
          assertArtifactName(name)
          const sha256 = createHash('sha256').update(bytes).digest('hex')
          return transaction(ctx, async (client) => {
            await lockThread(client, threadId)
            // The update on conflict (renewing the put time) locks the blob row, so a concurrent blobs.delete waits and then sees the artifact.
            await client.query(`INSERT INTO ${T.blobs} (sha256, bytes, put_at) VALUES ($1, $2, ${PUT_AT}) ON CONFLICT (sha256) DO UPDATE SET ${RENEW_PUT_AT}`, [sha256, bufferOf(bytes)])
            const { rows } = await client.query<ArtifactRow>(
              `INSERT INTO ${T.artifacts} (thread_id, name, media_type, size, sha256, created_at) VALUES ($1, $2, $3, $4, $5, ${NOW_MS})
               ON CONFLICT (thread_id, name) DO UPDATE SET media_type = EXCLUDED.media_type, size = EXCLUDED.size, sha256 = EXCLUDED.sha256, created_at = EXCLUDED.created_at
               RETURNING name, media_type, size, sha256, created_at`,
              [threadId, name, mediaType, bytes.length, sha256],
            )
            return artifactOf(rows[0]!)
          })
        },
        list: async (threadId) => (await query<ArtifactRow>(ctx, `SELECT name, media_type, size, sha256, created_at FROM ${T.artifacts} WHERE thread_id = $1`, [threadId])).rows.map(artifactOf).sort(byName),
      },
      blobs: {
        put: async (sha256, bytes) => {
          assertBlobMatches(sha256, bytes)
          // A blob already stored keeps its bytes; its put time is renewed under the row lock a racing delete also takes.
          await query(ctx, `INSERT INTO ${T.blobs} (sha256, bytes, put_at) VALUES ($1, $2, ${PUT_AT}) ON CONFLICT (sha256) DO UPDATE SET ${RENEW_PUT_AT}`, [sha256, bufferOf(bytes)])
        },
        get: async (sha256) => {
          const row = (await query<{ bytes: Buffer }>(ctx, `SELECT bytes FROM ${T.blobs} WHERE sha256 = $1`, [sha256])).rows[0]
          return row === undefined ? null : new Uint8Array(row.bytes)
        },
        references: async (sha256) => Number((await query<{ n: string }>(ctx, `SELECT ${references} AS n`, [sha256])).rows[0]!.n),
        listUnreferenced: async (options) => {
          const olderThanMs = parseBlobAgeOptions(options, 'blobs.listUnreferenced')
          // 0 lists every unreferenced blob, whatever the put times.
          const age = olderThanMs === 0 ? '' : ` AND b.put_at <= ${NOW_MS} - $1`
          const { rows } = await query<{ sha256: string }>(ctx, `SELECT sha256 FROM ${T.blobs} b WHERE checkpoint_refs = 0${age} AND NOT EXISTS (SELECT 1 FROM ${T.artifacts} a WHERE a.sha256 = b.sha256) ORDER BY sha256 COLLATE "C"`, olderThanMs === 0 ? [] : [olderThanMs])
          return rows.map((row) => row.sha256)
        },
        delete: async (sha256, options) => {
          const olderThanMs = parseBlobAgeOptions(options, 'blobs.delete')
          return transaction(ctx, async (client): Promise<SandboxBlobDeleteResult> => {
            // Lock the row first: a racing artifacts.put, blobs.put or append then either finished (and is seen) or waits for the delete.
            const row = (await client.query<{ recent: boolean }>(`SELECT $2::double precision > 0 AND put_at > ${NOW_MS} - $2 AS recent FROM ${T.blobs} WHERE sha256 = $1 FOR UPDATE`, [sha256, olderThanMs])).rows[0]
            if (row === undefined) return 'missing'
            if (Number((await client.query<{ n: string }>(`SELECT ${references} AS n`, [sha256])).rows[0]!.n) > 0) return 'referenced'
            if (row.recent) return 'recent'
            await client.query(`DELETE FROM ${T.blobs} WHERE sha256 = $1`, [sha256])
            return 'deleted'
          })
        },
      },
      checkpoints,
    },
  }
}

/** JavaScript string order, as the in-memory store sorts (the database's collation may differ). */
const byName = (a: SandboxArtifact, b: SandboxArtifact): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
/** A Buffer over the same bytes (node-postgres sends a Buffer as bytea). */
const bufferOf = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
