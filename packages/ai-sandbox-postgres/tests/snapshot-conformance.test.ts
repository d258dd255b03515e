// The portable-snapshot persistence of createPostgresStores (stores.snapshots):
// the shared checkpoint-store kit on a real server (a fresh schema per check,
// dropped after the file), the atomicity of append and fork (a failure
// part-way writes nothing), and the README's example through chat()
// (@testing/support/store-suites/snapshots).
import { createHash, randomUUID } from 'node:crypto'
import { hashSandboxSnapshotManifest, SANDBOX_SNAPSHOT_MANIFEST_VERSION, type SandboxCheckpointInput, type SandboxSnapshotManifest, type SandboxSnapshotPersistence } from '@tanstack/ai-sandbox'
import { runSandboxCheckpointStoreConformance } from '@tanstack/ai-sandbox/testkit'
import { runSnapshotsThroughChatSuite } from '@testing/support/store-suites/snapshots'
import { expect, it } from 'vitest'
import { describePostgres, postgresTarget, tempSchemas } from './helpers/postgres.js'

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

describePostgres('postgres snapshot persistence', (url) => {
  const schemas = tempSchemas(url)

  runSandboxCheckpointStoreConformance('postgres', { makePersistence: async () => (await schemas.open()).snapshots })

  it('an append that fails after its row was written (the reference update) rolls the row back', async () => {
    const stores = await schemas.open()
    const p = stores.snapshots
    const t = `atomic:${randomUUID()}`
    const blobs = [Buffer.from(`one ${randomUUID()}`), Buffer.from(`two ${randomUUID()}`)]
    for (const bytes of blobs) await p.stores.blobs.put(sha(bytes), bytes)
    const keys = blobs.map(sha).sort()
    await stores.pool.query(`
      CREATE FUNCTION "${stores.schema}".poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'poisoned blob'; END $$;
      CREATE TRIGGER poison BEFORE UPDATE ON "${stores.schema}".snapshot_blobs FOR EACH ROW WHEN (NEW.sha256 = '${keys[1]}') EXECUTE FUNCTION "${stores.schema}".poison();`)
    const lease = (await p.stores.checkpoints.acquireLease(t, { owner: 'a', ttlMs: 60_000 }))!
    const checkpoint = checkpointOf(t, keys)
    await expect(p.stores.checkpoints.append({ lease, expectedHead: null, checkpoint })).rejects.toThrow('poisoned blob')
    expect(await state(p, t, keys), 'no head, no checkpoint, no reference').toEqual({ head: null, chain: [], references: [0, 0] })
    await stores.pool.query(`DROP TRIGGER poison ON "${stores.schema}".snapshot_blobs`)
    const retried = await p.stores.checkpoints.append({ lease, expectedHead: null, checkpoint })
    expect(retried.ok && retried.checkpoint.sequence, 'the same append then lands as the first checkpoint').toBe(1)
    expect(await p.stores.blobs.references(keys[0]!)).toBe(1)
  })

  it('a fork that fails part-way copies no checkpoint, message, artifact or reference', async () => {
    const stores = await schemas.open()
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
    // The artifact copy, the fork's last statement, fails.
    await stores.pool.query(`
      CREATE FUNCTION "${stores.schema}".poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'poisoned artifact'; END $$;
      CREATE TRIGGER poison BEFORE INSERT ON "${stores.schema}".snapshot_artifacts FOR EACH ROW WHEN (NEW.thread_id = '${target}') EXECUTE FUNCTION "${stores.schema}".poison();`)
    const fork = { threadId: source, checkpointId: checkpoint.checkpointId, targetThreadId: target, newCheckpointId: randomUUID(), createdAt: 1 }
    await expect(p.stores.checkpoints.forkFromCheckpoint!(fork)).rejects.toThrow('poisoned artifact')
    expect(await p.stores.checkpoints.list(target)).toEqual([])
    expect(await p.stores.messages.list(target)).toEqual([])
    expect(await p.stores.blobs.references(sha(bytes)), 'only the source checkpoint references the file').toBe(1)
    expect(await p.stores.blobs.references(artifact.sha256), 'the source checkpoint and the source artifact').toBe(2)
    await stores.pool.query(`DROP TRIGGER poison ON "${stores.schema}".snapshot_artifacts`)
    expect((await p.stores.checkpoints.forkFromCheckpoint!(fork)).ok, 'the target is still empty, so the fork then succeeds').toBe(true)
  })
})

runSnapshotsThroughChatSuite(postgresTarget)
