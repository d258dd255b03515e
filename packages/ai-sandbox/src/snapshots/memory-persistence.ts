/**
 * `createInMemorySandboxPersistence`: every snapshot store in one process's
 * memory, for tests, examples and `memorySandboxSnapshots`. Each method is
 * one synchronous step between awaits, so it is as atomic as a transaction of
 * a database store; records are copied in and out, so a caller never holds
 * the store's own objects.
 */
import { createHash, randomUUID } from 'node:crypto'
import type { ModelMessage } from '@tanstack/ai'
import {
  assertArtifactName,
  assertBlobMatches,
  blobMissingForAppend,
  checkpointBlobs,
  parseBlobAgeOptions,
  type SandboxArtifact,
  type SandboxCheckpoint,
  type SandboxCheckpointLease,
  type SandboxCheckpointStore,
  type SandboxSnapshotPersistence,
} from './stores.js'

/** Options of {@link createInMemorySandboxPersistence}. */
export interface InMemorySandboxPersistenceOptions {
  /** The store's clock (epoch ms), for lease expiry, an artifact's `createdAt` and a blob's put time. Default `Date.now`. */
  now?: () => number
}

/**
 * Every store portable snapshots need, in memory (one process; gone at
 * exit). The checkpoint store implements `forkFromCheckpoint`.
 *
 * @param options - `now`, the clock of lease expiry, artifact times and blob put times (default `Date.now`).
 * @returns `{ stores: { messages, artifacts, blobs, checkpoints } }`.
 * @example
 * ```ts
 * const persistence = createInMemorySandboxPersistence()
 * const snapshots = createSandboxSnapshots({ persistence, sandbox, instances })
 * ```
 */
export function createInMemorySandboxPersistence(options: InMemorySandboxPersistenceOptions = {}): SandboxSnapshotPersistence {
  const now = options.now ?? Date.now
  const messages = new Map<string, ModelMessage[]>()
  const artifacts = new Map<string, Map<string, SandboxArtifact>>()
  const blobs = new Map<string, Uint8Array>()
  /** When each blob was last put (epoch ms), for the grace period of `listUnreferenced` and `delete`. */
  const putAt = new Map<string, number>()
  const checkpoints = new Map<string, SandboxCheckpoint[]>()
  const leases = new Map<string, SandboxCheckpointLease>()
  /** Fence per thread, kept after a release so a new holder always gets a higher one. */
  const fences = new Map<string, number>()
  /** References per blob from checkpoints; artifacts are counted when asked. */
  const checkpointRefs = new Map<string, number>()

  const clone = <T>(value: T): T => structuredClone(value)
  const addRefs = (checkpoint: SandboxCheckpoint) => {
    for (const sha of checkpointBlobs(checkpoint)) checkpointRefs.set(sha, (checkpointRefs.get(sha) ?? 0) + 1)
  }
  const artifactRefs = (sha256: string) => {
    let count = 0
    for (const byName of artifacts.values()) for (const artifact of byName.values()) if (artifact.sha256 === sha256) count++
    return count
  }
  const references = (sha256: string) => (checkpointRefs.get(sha256) ?? 0) + artifactRefs(sha256)
  /** Store the bytes once; every put renews the put time (never backwards). */
  const putBlob = (sha256: string, bytes: Uint8Array) => {
    if (!blobs.has(sha256)) blobs.set(sha256, Uint8Array.from(bytes))
    putAt.set(sha256, Math.max(putAt.get(sha256) ?? 0, now()))
  }
  /** True when the blob was put less than `olderThanMs` ago (never with 0, today's behaviour whatever the clock does). */
  const recent = (sha256: string, olderThanMs: number) => olderThanMs > 0 && now() - (putAt.get(sha256) ?? 0) < olderThanMs
  const held = (lease: SandboxCheckpointLease) => {
    const current = leases.get(lease.threadId)
    return current !== undefined && current.token === lease.token && current.expiresAt > now()
  }

  const checkpointStore: SandboxCheckpointStore = {
    head: async (threadId) => clone(checkpoints.get(threadId)?.at(-1) ?? null),
    get: async (threadId, checkpointId) => clone(checkpoints.get(threadId)?.find((c) => c.checkpointId === checkpointId) ?? null),
    list: async (threadId) => clone(checkpoints.get(threadId) ?? []),
    acquireLease: async (threadId, { owner, ttlMs }) => {
      const current = leases.get(threadId)
      if (current && current.owner !== owner && current.expiresAt > now()) return null
      const fence = (fences.get(threadId) ?? 0) + 1
      fences.set(threadId, fence)
      const lease: SandboxCheckpointLease = { threadId, owner, token: randomUUID(), fence, expiresAt: now() + ttlMs }
      leases.set(threadId, lease)
      return { ...lease }
    },
    renewLease: async (lease, ttlMs) => {
      if (!held(lease)) return null
      const renewed = { ...lease, expiresAt: now() + ttlMs }
      leases.set(lease.threadId, renewed)
      return { ...renewed }
    },
    releaseLease: async (lease) => {
      if (leases.get(lease.threadId)?.token === lease.token) leases.delete(lease.threadId)
    },
    append: async ({ lease, expectedHead, checkpoint }) => {
      if (!held(lease) || lease.threadId !== checkpoint.threadId) return { ok: false, reason: 'lease-lost' }
      const chain = checkpoints.get(checkpoint.threadId) ?? []
      const head = chain.at(-1) ?? null
      if ((head?.checkpointId ?? null) !== expectedHead) return { ok: false, reason: 'head-moved' }
      for (const sha of checkpointBlobs(checkpoint)) {
        if (!blobs.has(sha)) throw blobMissingForAppend(sha, checkpoint)
      }
      const stored: SandboxCheckpoint = { ...clone(checkpoint), sequence: (head?.sequence ?? 0) + 1, parentCheckpointId: head?.checkpointId ?? null }
      checkpoints.set(checkpoint.threadId, [...chain, stored])
      addRefs(stored)
      return { ok: true, checkpoint: clone(stored) }
    },
    forkFromCheckpoint: async ({ threadId, checkpointId, targetThreadId, newCheckpointId, createdAt }) => {
      const source = checkpoints.get(threadId)?.find((c) => c.checkpointId === checkpointId)
      if (!source) return { ok: false, reason: 'not-found' }
      if ((checkpoints.get(targetThreadId)?.length ?? 0) > 0 || (messages.get(targetThreadId)?.length ?? 0) > 0 || (artifacts.get(targetThreadId)?.size ?? 0) > 0) return { ok: false, reason: 'target-not-empty' }
      const copy: SandboxCheckpoint = {
        ...clone(source),
        threadId: targetThreadId,
        checkpointId: newCheckpointId,
        sequence: 1,
        parentCheckpointId: null,
        kind: 'fork',
        forkedFrom: { threadId, checkpointId },
        createdAt,
      }
      checkpoints.set(targetThreadId, [copy])
      addRefs(copy)
      messages.set(targetThreadId, clone((messages.get(threadId) ?? []).slice(0, source.messageCount)))
      artifacts.set(targetThreadId, new Map(source.artifacts.map((a) => [a.name, { ...a }])))
      return { ok: true, checkpoint: clone(copy) }
    },
  }

  return {
    stores: {
      messages: {
        list: async (threadId) => clone(messages.get(threadId) ?? []),
        append: async (threadId, added, expectedCount) => {
          const current = messages.get(threadId) ?? []
          if (current.length !== expectedCount) return false
          messages.set(threadId, [...current, ...clone([...added])])
          return true
        },
      },
      artifacts: {
        put: async (threadId, { name, mediaType, bytes }) => {
          assertArtifactName(name)
          const sha256 = createHash('sha256').update(bytes).digest('hex')
          putBlob(sha256, bytes)
          const artifact: SandboxArtifact = { name, mediaType, size: bytes.length, sha256, createdAt: now() }
          let byName = artifacts.get(threadId)
          if (!byName) artifacts.set(threadId, (byName = new Map()))
          byName.set(name, artifact)
          return { ...artifact }
        },
        list: async (threadId) => [...(artifacts.get(threadId)?.values() ?? [])].map((a) => ({ ...a })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      },
      blobs: {
        put: async (sha256, bytes) => {
          assertBlobMatches(sha256, bytes)
          putBlob(sha256, bytes)
        },
        get: async (sha256) => {
          const bytes = blobs.get(sha256)
          return bytes ? Uint8Array.from(bytes) : null
        },
        references: async (sha256) => references(sha256),
        listUnreferenced: async (options) => {
          const olderThanMs = parseBlobAgeOptions(options, 'blobs.listUnreferenced')
          return [...blobs.keys()].filter((sha) => references(sha) === 0 && !recent(sha, olderThanMs)).sort()
        },
        delete: async (sha256, options) => {
          const olderThanMs = parseBlobAgeOptions(options, 'blobs.delete')
          if (!blobs.has(sha256)) return 'missing'
          if (references(sha256) > 0) return 'referenced'
          if (recent(sha256, olderThanMs)) return 'recent'
          blobs.delete(sha256)
          putAt.delete(sha256)
          return 'deleted'
        },
      },
      checkpoints: checkpointStore,
    },
  }
}
