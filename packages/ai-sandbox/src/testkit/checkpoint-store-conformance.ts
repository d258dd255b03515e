/**
 * `runSandboxCheckpointStoreConformance`: the contract of a portable-snapshot
 * persistence value (`{ stores: { messages, artifacts, blobs, checkpoints } }`)
 * as a vitest suite, for the in-memory set and every database store. Every
 * check works on thread ids and blob bytes unique to this run, so it is safe
 * against a shared database; blobs it deletes are its own.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { hashSandboxSnapshotManifest, SANDBOX_SNAPSHOT_MANIFEST_VERSION, type SandboxSnapshotManifest } from '../snapshots/manifest.js'
import { SandboxSnapshotError } from '../snapshots/errors.js'
import { SandboxConfigError } from '../contracts/errors.js'
import type { SandboxArtifact, SandboxCheckpointInput, SandboxCheckpointLease, SandboxSnapshotPersistence } from '../snapshots/stores.js'

/** Options of {@link runSandboxCheckpointStoreConformance}. */
export interface SandboxCheckpointStoreConformanceOptions {
  /** The persistence value under test; called once per check. */
  makePersistence: () => SandboxSnapshotPersistence | Promise<SandboxSnapshotPersistence>
  /** Timeout of each check, ms. Default 30 000. */
  timeoutMs?: number
}

const RUN = randomUUID().slice(0, 8)
const thread = (name: string) => `conformance:${RUN}:${name}:${randomUUID().slice(0, 8)}`
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** Bytes nobody else stores (so deleting their blob touches nothing else). */
function uniqueBytes(label: string): Uint8Array {
  return Buffer.concat([Buffer.from(`${label}\0`), randomBytes(24), Buffer.from([0, 255, 0])])
}

/** A checkpoint input over the given blobs (each a file `f<i>`), stored first. */
async function checkpointOver(p: SandboxSnapshotPersistence, threadId: string, files: readonly Uint8Array[], extra: Partial<SandboxCheckpointInput> = {}): Promise<SandboxCheckpointInput> {
  for (const bytes of files) await p.stores.blobs.put(sha(bytes), bytes)
  const manifest: SandboxSnapshotManifest = {
    version: SANDBOX_SNAPSHOT_MANIFEST_VERSION,
    entries: [{ path: 'd', type: 'directory', mode: 0o755 }, ...files.map((bytes, i) => ({ path: `f${i}`, type: 'file' as const, mode: 0o644, size: bytes.length, sha256: sha(bytes) }))],
  }
  return { threadId, checkpointId: randomUUID(), kind: 'run', runId: `run-${randomUUID().slice(0, 8)}`, manifest, manifestSha256: hashSandboxSnapshotManifest(manifest), messageCount: 0, artifacts: [], createdAt: 1_700_000_000_123, ...extra }
}

async function lease(p: SandboxSnapshotPersistence, threadId: string, owner = 'owner-a', ttlMs = 60_000): Promise<SandboxCheckpointLease> {
  const got = await p.stores.checkpoints.acquireLease(threadId, { owner, ttlMs })
  expect(got, 'acquireLease on a thread nobody holds returns a lease').not.toBeNull()
  return got!
}

/** A fresh thread is empty everywhere; unknown ids answer null, never throw. */
export async function checkEmptyThread(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('empty')
  expect(await p.stores.checkpoints.head(t), 'head of an unknown thread is null').toBeNull()
  expect(await p.stores.checkpoints.list(t), 'list of an unknown thread is []').toEqual([])
  expect(await p.stores.checkpoints.get(t, randomUUID()), 'get of an unknown checkpoint is null').toBeNull()
  expect(await p.stores.messages.list(t), 'messages.list of an unknown thread is []').toEqual([])
  expect(await p.stores.artifacts.list(t), 'artifacts.list of an unknown thread is []').toEqual([])
  expect(await p.stores.blobs.get('0'.repeat(64)), 'blobs.get of an unknown blob is null').toBeNull()
}

/** append is a compare-and-set on the head: sequences, parents and every field round-trip; a stale head writes nothing. */
export async function checkAppendChain(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('chain')
  const l = await lease(p, t)
  const artifact: SandboxArtifact = { name: 'a.md', mediaType: 'text/markdown', size: 3, sha256: sha(Buffer.from('a\n\n')), createdAt: 1_700_000_000_000 }
  await p.stores.blobs.put(artifact.sha256, Buffer.from('a\n\n'))
  const first = await checkpointOver(p, t, [uniqueBytes('chain-1')], { label: 'first', messageCount: 2, artifacts: [artifact] })
  const one = await p.stores.checkpoints.append({ lease: l, expectedHead: null, checkpoint: first })
  expect(one, 'the first append on an empty thread with expectedHead null succeeds').toEqual({ ok: true, checkpoint: { ...first, sequence: 1, parentCheckpointId: null } })
  expect(await p.stores.checkpoints.get(t, first.checkpointId), 'get returns every field append stored').toEqual({ ...first, sequence: 1, parentCheckpointId: null })
  const stale = await p.stores.checkpoints.append({ lease: l, expectedHead: null, checkpoint: await checkpointOver(p, t, [uniqueBytes('chain-stale')]) })
  expect(stale, 'an append whose expectedHead is not the head writes nothing').toEqual({ ok: false, reason: 'head-moved' })
  const second = await checkpointOver(p, t, [uniqueBytes('chain-2')], { kind: 'save', label: 'second' })
  const two = await p.stores.checkpoints.append({ lease: l, expectedHead: first.checkpointId, checkpoint: second })
  expect(two.ok && [two.checkpoint.sequence, two.checkpoint.parentCheckpointId], 'the next append gets sequence 2 and the old head as parent').toEqual([2, first.checkpointId])
  expect((await p.stores.checkpoints.head(t))?.checkpointId, 'the head is the latest append').toBe(second.checkpointId)
  expect((await p.stores.checkpoints.list(t)).map((c) => c.checkpointId), 'list is oldest first and holds no failed append').toEqual([first.checkpointId, second.checkpointId])
  expect(await p.stores.checkpoints.get(thread('other'), first.checkpointId), 'get through another thread id is null').toBeNull()
}

/** An append naming a blob that is not stored is refused (`blob-missing`) and changes no head, checkpoint or reference: one transaction. */
export async function checkAppendMissingBlob(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('missing-blob')
  const l = await lease(p, t)
  const stored = uniqueBytes('stored')
  const first = await checkpointOver(p, t, [stored])
  expect((await p.stores.checkpoints.append({ lease: l, expectedHead: null, checkpoint: first })).ok).toBe(true)
  const missing = sha(uniqueBytes('never-stored'))
  const bad = await checkpointOver(p, t, [stored])
  const withMissing: SandboxCheckpointInput = { ...bad, manifest: { ...bad.manifest, entries: [...bad.manifest.entries, { path: 'zz-missing', type: 'file', mode: 0o644, size: 1, sha256: missing }] } }
  const state = async () => ({ head: (await p.stores.checkpoints.head(t))?.checkpointId, chain: (await p.stores.checkpoints.list(t)).map((c) => c.checkpointId), references: [await p.stores.blobs.references(sha(stored)), await p.stores.blobs.references(missing)] })
  const before = await state()
  const error = await p.stores.checkpoints.append({ lease: l, expectedHead: first.checkpointId, checkpoint: withMissing }).then(() => undefined, (thrown: unknown) => thrown)
  expect(SandboxSnapshotError.isInstance(error) && error.reason, 'an append naming an unstored blob throws SandboxSnapshotError blob-missing').toBe('blob-missing')
  expect(await state(), 'the refused append changed no head, checkpoint or reference').toEqual(before)
  expect(before).toEqual({ head: first.checkpointId, chain: [first.checkpointId], references: [1, 0] })
}

/** One writer per thread: another owner waits; the same owner takes over with a new token and a higher fence; old tokens are fenced out. */
export async function checkLeaseFencing(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('lease')
  const a = await lease(p, t, 'owner-a')
  expect(typeof a.token === 'string' && a.token.length > 0 && Number.isInteger(a.fence) && a.expiresAt > Date.now() - 60_000, 'a lease has a token, an integer fence and an expiry').toBe(true)
  expect(await p.stores.checkpoints.acquireLease(t, { owner: 'owner-b', ttlMs: 60_000 }), 'another owner cannot take a live lease').toBeNull()
  const again = await lease(p, t, 'owner-a')
  expect(again.token !== a.token && again.fence > a.fence, 'the same owner (a takeover of the same run) takes the lease over with a new token and a higher fence').toBe(true)
  expect(await p.stores.checkpoints.renewLease(a, 60_000), 'the replaced token cannot renew').toBeNull()
  expect(await p.stores.checkpoints.append({ lease: a, expectedHead: null, checkpoint: await checkpointOver(p, t, []) }), 'the replaced token cannot append').toEqual({ ok: false, reason: 'lease-lost' })
  await p.stores.checkpoints.releaseLease(a) // stale: must not release the current holder
  expect(await p.stores.checkpoints.acquireLease(t, { owner: 'owner-b', ttlMs: 60_000 }), 'releasing with a stale token leaves the current lease held').toBeNull()
  const renewed = await p.stores.checkpoints.renewLease(again, 120_000)
  expect(renewed !== null && renewed.token === again.token && renewed.expiresAt >= again.expiresAt, 'the holder renews, keeping its token').toBe(true)
  await p.stores.checkpoints.releaseLease(renewed!)
  const b = await lease(p, t, 'owner-b')
  expect(b.fence > again.fence, 'after a release the next holder gets a higher fence than every earlier one').toBe(true)
  expect(await p.stores.checkpoints.append({ lease: again, expectedHead: null, checkpoint: await checkpointOver(p, t, []) }), 'a released token cannot append').toEqual({ ok: false, reason: 'lease-lost' })
  const other = thread('lease-other')
  await lease(p, other, 'owner-c') // leases are per thread
}

/** An expired lease may be taken by another owner; the expired holder can neither renew nor append. */
export async function checkLeaseExpiry(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('expiry')
  const a = await lease(p, t, 'owner-a', 1_000)
  await new Promise((resolve) => setTimeout(resolve, 1_300))
  const b = await p.stores.checkpoints.acquireLease(t, { owner: 'owner-b', ttlMs: 60_000 })
  expect(b, 'another owner takes a lease past its expiry').not.toBeNull()
  expect(await p.stores.checkpoints.renewLease(a, 60_000), 'the expired holder cannot renew once taken').toBeNull()
  expect(await p.stores.checkpoints.append({ lease: a, expectedHead: null, checkpoint: await checkpointOver(p, t, []) }), 'the expired holder cannot append').toEqual({ ok: false, reason: 'lease-lost' })
}

/** Two appends racing on one head: exactly one lands. Two owners racing for a free lease: exactly one gets it. */
export async function checkRaces(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('race')
  const l = await lease(p, t)
  const inputs = await Promise.all([0, 1, 2, 3].map((i) => checkpointOver(p, t, [uniqueBytes(`race-${i}`)])))
  const results = await Promise.all(inputs.map((checkpoint) => p.stores.checkpoints.append({ lease: l, expectedHead: null, checkpoint })))
  expect(results.filter((r) => r.ok).length, 'of appends racing on the same head exactly one succeeds').toBe(1)
  expect(results.filter((r) => !r.ok).map((r) => !r.ok && r.reason), 'the others answer head-moved').toEqual(['head-moved', 'head-moved', 'head-moved'])
  expect((await p.stores.checkpoints.list(t)).length, 'one checkpoint is stored').toBe(1)
  const free = thread('race-lease')
  const got = await Promise.all(['w', 'x', 'y', 'z'].map((owner) => p.stores.checkpoints.acquireLease(free, { owner, ttlMs: 60_000 })))
  expect(got.filter((g) => g !== null).length, 'of owners racing for a free lease exactly one gets it').toBe(1)
}

/** Blobs: exact bytes, stored only under their own SHA-256; references count checkpoints (once each) and current artifacts; only unreferenced blobs are deleted by hand. */
export async function checkBlobReferences(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('refs')
  const bytes = uniqueBytes('refs')
  const key = sha(bytes)
  await p.stores.blobs.put(key, bytes)
  await p.stores.blobs.put(key, bytes)
  expect(Buffer.from((await p.stores.blobs.get(key))!).equals(Buffer.from(bytes)), 'get returns the exact bytes put (NUL and 0xff included)').toBe(true)
  expect(await p.stores.blobs.references(key), 'a blob no checkpoint names has 0 references').toBe(0)
  expect(await p.stores.blobs.listUnreferenced(), 'an unreferenced blob is listed for manual deletion').toContain(key)
  const l = await lease(p, t)
  const first = await checkpointOver(p, t, [bytes, bytes]) // two files, one blob
  expect((await p.stores.checkpoints.append({ lease: l, expectedHead: null, checkpoint: first })).ok).toBe(true)
  expect(await p.stores.blobs.references(key), 'a checkpoint counts one reference per blob it names, however many files share it').toBe(1)
  const second = await checkpointOver(p, t, [bytes])
  expect((await p.stores.checkpoints.append({ lease: l, expectedHead: first.checkpointId, checkpoint: second })).ok).toBe(true)
  expect(await p.stores.blobs.references(key), 'each checkpoint naming the blob adds one').toBe(2)
  expect(await p.stores.blobs.listUnreferenced(), 'a referenced blob is not listed').not.toContain(key)
  expect(await p.stores.blobs.delete(key), 'a referenced blob is kept').toBe('referenced')
  expect(await p.stores.blobs.get(key), 'and is still there').not.toBeNull()
  const forged = uniqueBytes('forged')
  await expect(p.stores.blobs.put(sha(uniqueBytes('other')), forged), 'put refuses bytes that are not the named blob').rejects.toThrow()
  await expect(p.stores.blobs.put('not-a-sha', forged), 'put refuses a key that is not a SHA-256').rejects.toThrow()
  expect(await p.stores.blobs.listUnreferenced(), 'a refused put stores nothing').not.toContain(sha(forged))
  const loose = uniqueBytes('loose')
  await p.stores.blobs.put(sha(loose), loose)
  expect(await p.stores.blobs.delete(sha(loose)), 'an unreferenced blob is deleted').toBe('deleted')
  expect(await p.stores.blobs.get(sha(loose)), 'a deleted blob is gone').toBeNull()
  expect(await p.stores.blobs.delete(sha(loose)), 'deleting a missing blob answers missing').toBe('missing')
}

const HOUR_MS = 3_600_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The grace period of blob retention: `listUnreferenced` and `delete` with
 * `olderThanMs` leave alone a blob put less than that many ms ago (a capture
 * in flight), a re-put renews the put time, a reference is answered before
 * the age, and a bad age is refused naming the field. The wait only makes
 * ages logical (a blob put before it is at least that old); the one check
 * that a blob is still young (just re-put) allows it 400 ms of store calls.
 */
export async function checkBlobGrace(p: SandboxSnapshotPersistence): Promise<void> {
  const { blobs } = p.stores
  const fresh = uniqueBytes('grace-fresh')
  const renewed = uniqueBytes('grace-renewed')
  await blobs.put(sha(fresh), fresh)
  await blobs.put(sha(renewed), renewed)
  expect(await blobs.listUnreferenced({ olderThanMs: HOUR_MS }), 'a blob put just now is not listed with a grace of one hour').not.toContain(sha(fresh))
  expect(await blobs.listUnreferenced(), 'without olderThanMs every unreferenced blob is listed, however new').toContain(sha(fresh))
  expect(await blobs.listUnreferenced({ olderThanMs: 0 }), 'olderThanMs 0 is the default').toContain(sha(fresh))
  expect(await blobs.delete(sha(fresh), { olderThanMs: HOUR_MS }), 'a blob put less than olderThanMs ago is kept').toBe('recent')
  expect(await blobs.get(sha(fresh)), 'and is still there').not.toBeNull()

  const waitedMs = 500
  await sleep(waitedMs)
  const older = await blobs.listUnreferenced({ olderThanMs: 10 })
  expect(older, 'once older than olderThanMs, an unreferenced blob is listed').toContain(sha(fresh))
  expect(older, 'the same for the other blob put before the wait').toContain(sha(renewed))
  await blobs.put(sha(renewed), renewed)
  const graceMs = waitedMs - 100
  const afterRenewal = await blobs.listUnreferenced({ olderThanMs: graceMs })
  expect(afterRenewal, `a blob put ${waitedMs} ms ago is listed with olderThanMs ${graceMs}`).toContain(sha(fresh))
  expect(afterRenewal, 'a put of a stored blob renews its put time, so it is not listed').not.toContain(sha(renewed))
  expect(await blobs.delete(sha(renewed), { olderThanMs: graceMs }), 'nor deleted: a capture that reuses a blob keeps it').toBe('recent')
  expect(Buffer.from((await blobs.get(sha(renewed)))!).equals(Buffer.from(renewed)), 'a re-put keeps the bytes').toBe(true)
  expect(await blobs.delete(sha(fresh), { olderThanMs: 10 }), 'an unreferenced blob older than olderThanMs is deleted').toBe('deleted')
  expect(await blobs.get(sha(fresh)), 'a deleted blob is gone').toBeNull()
  expect(await blobs.delete(sha(fresh), { olderThanMs: HOUR_MS }), 'a missing blob answers missing, whatever the grace').toBe('missing')

  const t = thread('grace')
  const l = await lease(p, t)
  const held = uniqueBytes('grace-held')
  const checkpoint = await checkpointOver(p, t, [held])
  expect((await p.stores.checkpoints.append({ lease: l, expectedHead: null, checkpoint })).ok).toBe(true)
  expect(await blobs.delete(sha(held), { olderThanMs: HOUR_MS }), 'a referenced blob answers referenced, before recent').toBe('referenced')
  expect(await blobs.delete(sha(held), { olderThanMs: 0 }), 'and referenced without a grace').toBe('referenced')

  const refused = async (call: () => Promise<unknown>, field: string, what: string) => {
    const error = await call().then(() => undefined, (thrown: unknown) => thrown)
    expect(SandboxConfigError.isInstance(error) && error.field, `${what} is refused with SandboxConfigError naming ${field}`).toBe(field)
  }
  for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, '5']) {
    const options = { olderThanMs: bad as number }
    const shown = typeof bad === 'string' ? `'${bad}'` : String(bad)
    await refused(() => blobs.listUnreferenced(options), 'blobs.listUnreferenced.olderThanMs', `listUnreferenced({ olderThanMs: ${shown} })`)
    await refused(() => blobs.delete(sha(renewed), options), 'blobs.delete.olderThanMs', `delete(sha, { olderThanMs: ${shown} })`)
  }
  expect(await blobs.get(sha(renewed)), 'a refused delete deletes nothing').not.toBeNull()
}

/** Artifacts: put stores the blob and records the artifact; a put of the same name replaces it; the current ones hold their blobs. */
export async function checkArtifacts(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('artifacts')
  const v1 = uniqueBytes('artifact-v1')
  const put = await p.stores.artifacts.put(t, { name: 'reports/summary.md', mediaType: 'text/markdown', bytes: v1 })
  expect(put, 'put returns the artifact with its size and SHA-256').toMatchObject({ name: 'reports/summary.md', mediaType: 'text/markdown', size: v1.length, sha256: sha(v1) })
  expect(Number.isFinite(put.createdAt)).toBe(true)
  expect(Buffer.from((await p.stores.blobs.get(sha(v1)))!).equals(Buffer.from(v1)), 'the bytes are stored as a blob').toBe(true)
  expect(await p.stores.blobs.references(sha(v1)), 'a current artifact references its blob').toBe(1)
  await p.stores.artifacts.put(t, { name: 'a.txt', mediaType: 'text/plain', bytes: uniqueBytes('a') })
  const v2 = uniqueBytes('artifact-v2')
  await p.stores.artifacts.put(t, { name: 'reports/summary.md', mediaType: 'text/markdown', bytes: v2 })
  const listed = await p.stores.artifacts.list(t)
  expect(listed.map((a) => [a.name, a.sha256]), 'list holds one artifact per name, the latest put, sorted by name').toEqual([
    ['a.txt', listed[0]!.sha256],
    ['reports/summary.md', sha(v2)],
  ])
  expect(await p.stores.blobs.references(sha(v1)), 'a replaced artifact no longer references its old blob').toBe(0)
  await expect(p.stores.artifacts.put(t, { name: '', mediaType: 'text/plain', bytes: v1 }), 'an empty artifact name is refused').rejects.toThrow()
}

/** Messages: an append-only transcript with compare-and-set on its length; contents round-trip. */
export async function checkMessages(p: SandboxSnapshotPersistence): Promise<void> {
  const t = thread('messages')
  const turn: ModelMessage[] = [
    { role: 'user', content: 'héllo 🔑' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{"path":"a"}' } }] },
    { role: 'tool', content: 'file body', toolCallId: 'c1' },
    { role: 'assistant', content: [{ type: 'text', content: 'done' }] },
  ]
  expect(await p.stores.messages.append(t, turn.slice(0, 2), 0), 'append at the right count succeeds').toBe(true)
  expect(await p.stores.messages.append(t, turn.slice(2), 0), 'append at a stale count writes nothing').toBe(false)
  expect(await p.stores.messages.append(t, turn.slice(2), 2)).toBe(true)
  expect(await p.stores.messages.list(t), 'list returns every message in order, unchanged').toEqual(turn)
}

/** forkFromCheckpoint copies the selected checkpoint, its transcript prefix and its artifacts into an empty thread, with blob references. */
export async function checkFork(p: SandboxSnapshotPersistence): Promise<void> {
  const fork = p.stores.checkpoints.forkFromCheckpoint!
  const source = thread('fork-src')
  const l = await lease(p, source)
  await p.stores.messages.append(source, [{ role: 'user', content: 'one' }, { role: 'assistant', content: 'ok' }], 0)
  const art = await p.stores.artifacts.put(source, { name: 'r.md', mediaType: 'text/markdown', bytes: uniqueBytes('fork-art') })
  const bytes = uniqueBytes('fork-file')
  const selected = await checkpointOver(p, source, [bytes], { messageCount: 2, artifacts: [art] })
  expect((await p.stores.checkpoints.append({ lease: l, expectedHead: null, checkpoint: selected })).ok).toBe(true)
  await p.stores.messages.append(source, [{ role: 'user', content: 'two' }, { role: 'assistant', content: 'later' }], 2)
  await p.stores.artifacts.put(source, { name: 'later.md', mediaType: 'text/markdown', bytes: uniqueBytes('later') })
  const later = await checkpointOver(p, source, [uniqueBytes('later-file')], { messageCount: 4 })
  expect((await p.stores.checkpoints.append({ lease: l, expectedHead: selected.checkpointId, checkpoint: later })).ok).toBe(true)

  const target = thread('fork-dst')
  const newId = randomUUID()
  const result = await fork.call(p.stores.checkpoints, { threadId: source, checkpointId: selected.checkpointId, targetThreadId: target, newCheckpointId: newId, createdAt: 1_700_000_555_000 })
  const expected = { ...selected, threadId: target, checkpointId: newId, sequence: 1, parentCheckpointId: null, kind: 'fork', forkedFrom: { threadId: source, checkpointId: selected.checkpointId }, createdAt: 1_700_000_555_000 }
  expect(result, 'the fork is the selected checkpoint as the new thread\'s first').toEqual({ ok: true, checkpoint: expected })
  expect(await p.stores.checkpoints.head(target)).toEqual(expected)
  expect(await p.stores.messages.list(target), 'the fork copies the transcript the checkpoint covers, not what came later').toEqual([{ role: 'user', content: 'one' }, { role: 'assistant', content: 'ok' }])
  expect((await p.stores.artifacts.list(target)).map((a) => a.name), "the fork copies the checkpoint's artifacts, not later ones").toEqual(['r.md'])
  expect(await p.stores.blobs.references(sha(bytes)), 'the fork references the blobs it names').toBe(2)
  expect(await fork.call(p.stores.checkpoints, { threadId: source, checkpointId: selected.checkpointId, targetThreadId: target, newCheckpointId: randomUUID(), createdAt: 1 }), 'a fork into a thread with checkpoints is refused').toEqual({ ok: false, reason: 'target-not-empty' })
  const chatty = thread('fork-chatty')
  await p.stores.messages.append(chatty, [{ role: 'user', content: 'hi' }], 0)
  expect(await fork.call(p.stores.checkpoints, { threadId: source, checkpointId: selected.checkpointId, targetThreadId: chatty, newCheckpointId: randomUUID(), createdAt: 1 }), 'a fork into a thread with messages is refused').toEqual({ ok: false, reason: 'target-not-empty' })
  expect(await p.stores.checkpoints.list(chatty), 'a refused fork writes nothing').toEqual([])
  expect(await fork.call(p.stores.checkpoints, { threadId: thread('elsewhere'), checkpointId: selected.checkpointId, targetThreadId: thread('fork-x'), newCheckpointId: randomUUID(), createdAt: 1 }), 'a checkpoint of another thread is not found').toEqual({ ok: false, reason: 'not-found' })
}

/** Every check of the kit, by name. */
export const CHECKPOINT_STORE_CHECKS = {
  'an unknown thread is empty everywhere': checkEmptyThread,
  'append is a compare-and-set on the head, and every field round-trips': checkAppendChain,
  'an append naming a blob that is not stored is refused and writes nothing': checkAppendMissingBlob,
  'one writer per thread: takeover by the same owner, fencing of old tokens': checkLeaseFencing,
  'an expired lease can be taken, and its holder is fenced out': checkLeaseExpiry,
  'racing appends and racing acquisitions: exactly one wins': checkRaces,
  'blob references, and manual deletion of unreferenced blobs only': checkBlobReferences,
  'blob grace period: olderThanMs keeps recent blobs from listing and deletion, and a re-put renews': checkBlobGrace,
  'artifacts: put, replace, list, and the blobs they hold': checkArtifacts,
  'messages: append-only with compare-and-set': checkMessages,
} as const

/**
 * Register the checkpoint-store suite in the current vitest file: every
 * check of {@link CHECKPOINT_STORE_CHECKS}, plus the fork check when the
 * checkpoint store has `forkFromCheckpoint` (else a skipped case says so).
 *
 * @param name - Shown in the suite title, e.g. `sqlite`.
 * @param options - `makePersistence` (called once per check), `timeoutMs` (default 30 000).
 * @example
 * ```ts
 * runSandboxCheckpointStoreConformance('sqlite', { makePersistence: () => stores.snapshots })
 * ```
 */
export function runSandboxCheckpointStoreConformance(name: string, options: SandboxCheckpointStoreConformanceOptions): void {
  const timeoutMs = options.timeoutMs ?? 30_000
  describe(`sandbox checkpoint store conformance: ${name}`, () => {
    for (const [title, check] of Object.entries(CHECKPOINT_STORE_CHECKS)) {
      it(title, async () => check(await options.makePersistence()), timeoutMs)
    }
    it('forkFromCheckpoint copies a checkpoint, its transcript and its artifacts atomically (when implemented)', async (test) => {
      const persistence = await options.makePersistence()
      if (!persistence.stores.checkpoints.forkFromCheckpoint) return test.skip('skipped — the checkpoint store has no forkFromCheckpoint (snapshots.fork is unsupported with it)')
      await checkFork(persistence)
    }, timeoutMs)
  })
}
