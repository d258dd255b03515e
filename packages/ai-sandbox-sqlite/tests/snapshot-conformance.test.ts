// The portable-snapshot persistence of createSqliteStores (stores.snapshots):
// the shared checkpoint-store kit on a real database file (one per check),
// the atomicity of append and fork (a failure part-way writes nothing), and
// the README's example through chat() (@testing/support/store-suites/snapshots).
import { createHash, randomUUID } from 'node:crypto'
import { hashSandboxSnapshotManifest, SANDBOX_SNAPSHOT_MANIFEST_VERSION, type SandboxCheckpointInput, type SandboxSnapshotManifest, type SandboxSnapshotPersistence } from '@tanstack/ai-sandbox'
import { runSandboxCheckpointStoreConformance } from '@tanstack/ai-sandbox/testkit'
import { runSnapshotsThroughChatSuite } from '@testing/support/store-suites/snapshots'
import { describe, expect, it } from 'vitest'
import { sqliteTarget, tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

runSandboxCheckpointStoreConformance('sqlite', { makePersistence: () => dbs.open().snapshots })

const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex')

/** A checkpoint of `threadId` whose manifest names one file per blob given. */
function checkpointOf(threadId: string, blobs: readonly string[]): SandboxCheckpointInput {
  const manifest: SandboxSnapshotManifest = { version: SANDBOX_SNAPSHOT_MANIFEST_VERSION, entries: blobs.map((sha256, i) => ({ path: `f${i}`, type: 'file' as const, mode: 0o644, size: 1, sha256 })) }
  return { threadId, checkpointId: randomUUID(), kind: 'run', manifest, manifestSha256: hashSandboxSnapshotManifest(manifest), messageCount: 0, artifacts: [], createdAt: 1_700_000_000_000 }
}

/** What an append may change: the chain, the head and each blob's references. */
async function state(p: SandboxSnapshotPersistence, threadId: string, blobs: readonly string[]) {
  return {
    head: (await p.stores.checkpoints.head(threadId))?.checkpointId ?? null,
    chain: (await p.stores.checkpoints.list(threadId)).map((c) => c.checkpointId),
    references: await Promise.all(blobs.map((b) => p.stores.blobs.references(b))),
  }
}

describe('sqlite snapshot persistence: a failed append or fork leaves nothing half-written', () => {
  it('an append that fails after its row and a first reference were written rolls both back', async () => {
    const stores = dbs.open()
    const p = stores.snapshots
    const t = `atomic:${randomUUID()}`
    const blobs = [Buffer.from(`one ${randomUUID()}`), Buffer.from(`two ${randomUUID()}`)]
    for (const bytes of blobs) await p.stores.blobs.put(sha(bytes), bytes)
    const keys = blobs.map(sha).sort()
    // The reference update of the last blob (append updates them in sorted order) fails inside the transaction.
    stores.db.exec(`CREATE TRIGGER poison BEFORE UPDATE OF checkpoint_refs ON snapshot_blobs WHEN NEW.sha256 = '${keys[1]}' BEGIN SELECT RAISE(ABORT, 'poisoned blob'); END`)
    const lease = (await p.stores.checkpoints.acquireLease(t, { owner: 'a', ttlMs: 60_000 }))!
    const checkpoint = checkpointOf(t, keys)
    await expect(p.stores.checkpoints.append({ lease, expectedHead: null, checkpoint })).rejects.toThrow('poisoned blob')
    expect(await state(p, t, keys), 'no head, no checkpoint, no reference').toEqual({ head: null, chain: [], references: [0, 0] })
    stores.db.exec('DROP TRIGGER poison')
    const retried = await p.stores.checkpoints.append({ lease, expectedHead: null, checkpoint })
    expect(retried.ok && retried.checkpoint.sequence, 'the same append then lands as the first checkpoint').toBe(1)
    expect(await p.stores.blobs.references(keys[0]!)).toBe(1)
  })

  it('a fork that fails part-way copies no checkpoint, message, artifact or reference', async () => {
    const stores = dbs.open()
    const p = stores.snapshots
    const source = `fork-src:${randomUUID()}`
    const target = `fork-dst:${randomUUID()}`
    const bytes = Buffer.from(`file ${randomUUID()}`)
    await p.stores.blobs.put(sha(bytes), bytes)
    await p.stores.messages.append(source, [{ role: 'user', content: 'hi' }], 0)
    const artifact = await p.stores.artifacts.put(source, { name: 'r.md', mediaType: 'text/markdown', bytes: Buffer.from(`art ${randomUUID()}`) })
    const lease = (await p.stores.checkpoints.acquireLease(source, { owner: 'a', ttlMs: 60_000 }))!
    const checkpoint = { ...checkpointOf(source, [sha(bytes)]), messageCount: 1, artifacts: [artifact] }
    expect((await p.stores.checkpoints.append({ lease, expectedHead: null, checkpoint })).ok).toBe(true)
    // The artifact copy, the fork's last step, fails.
    stores.db.exec(`CREATE TRIGGER poison BEFORE INSERT ON snapshot_artifacts WHEN NEW.thread_id = '${target}' BEGIN SELECT RAISE(ABORT, 'poisoned artifact'); END`)
    await expect(p.stores.checkpoints.forkFromCheckpoint!({ threadId: source, checkpointId: checkpoint.checkpointId, targetThreadId: target, newCheckpointId: randomUUID(), createdAt: 1 })).rejects.toThrow('poisoned artifact')
    expect(await p.stores.checkpoints.list(target)).toEqual([])
    expect(await p.stores.messages.list(target)).toEqual([])
    expect(await p.stores.blobs.references(sha(bytes)), 'only the source checkpoint references the file').toBe(1)
    expect(await p.stores.blobs.references(artifact.sha256), 'the source checkpoint and the source artifact').toBe(2)
    stores.db.exec('DROP TRIGGER poison')
    expect((await p.stores.checkpoints.forkFromCheckpoint!({ threadId: source, checkpointId: checkpoint.checkpointId, targetThreadId: target, newCheckpointId: randomUUID(), createdAt: 1 })).ok, 'the target is still empty, so the fork then succeeds').toBe(true)
  })
})

runSnapshotsThroughChatSuite(sqliteTarget)
