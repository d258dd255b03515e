/**
 * `createSandboxSnapshots` and `memorySandboxSnapshots`: portable snapshots
 * over a persistence value (spec 000 "Portable sandbox snapshots"). Owns the
 * server-side calls (`save`, `fork`, `readArtifact`, `latest`, `list`) and
 * the run-side steps `withSandbox` takes through {@link SNAPSHOT_RUNTIME}:
 * the thread's writer lease, the checkpoint after a successful run, the
 * restore of the latest checkpoint into a new sandbox. Invariants: a
 * checkpoint is appended under the writer lease on the head it was begun
 * on, after all its blobs are stored, or not at all; a restore verifies
 * everything before it writes.
 */
import { createHash, randomUUID } from 'node:crypto'
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SecretRef } from '../contracts/secret-ref.js'
import { parseOptions } from '../contracts/validate.js'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import { instanceStoreSchema, type SandboxInstanceStore } from '../definition/instance-store.js'
import { withWorkspaceSecrets } from '../workspace/bootstrap.js'
import { captureSandboxWorkspace } from './capture.js'
import { SandboxSnapshotError } from './errors.js'
import { createInMemorySandboxPersistence } from './memory-persistence.js'
import { resolveSnapshotPolicy, type SandboxSnapshotPolicy } from './policy.js'
import { restoreSandboxWorkspace } from './restore.js'
import { snapshotPersistenceSchema, type SandboxArtifact, type SandboxCheckpoint, type SandboxCheckpointLease, type SandboxSnapshotPersistence } from './stores.js'

/** Default writer-lease time to live, ms: renewed every third of it while a run holds it. */
export const DEFAULT_SNAPSHOT_LEASE_TTL_MS = 60_000

/** Options of {@link createSandboxSnapshots}. */
export interface SandboxSnapshotsOptions {
  /** Where checkpoints, blobs, messages and artifacts live; hand the same value to `withPersistence`. */
  persistence: SandboxSnapshotPersistence
  /** The sandbox `save` captures from, unless a call names one. */
  sandbox?: SandboxDefinition
  /** The instance store `save` finds the thread's live sandbox in, unless a call names one. Default: the definition's own. */
  instances?: SandboxInstanceStore
  /** Which paths a checkpoint stores; default `defaultSandboxSnapshotPolicy()`. Used for capture and restore alike. */
  policy?: SandboxSnapshotPolicy
  /** A kept file larger than this many bytes fails the capture. Default 64 MiB. */
  maxFileBytes?: number
  /** Writer-lease time to live, ms (renewed every third of it while held). Default 60 000. */
  leaseTtlMs?: number
}

/** Input of {@link SandboxSnapshots.save}. */
export interface SandboxSnapshotSaveInput {
  threadId: string
  /** The run the save belongs to (recorded on the checkpoint; part of the sandbox key for `reuse: 'none'`). */
  runId: string
  /** A name for the checkpoint, shown to users (1-200 characters). */
  label: string
  /** Default: the one given at create time. */
  sandbox?: SandboxDefinition
  /** Default: the one given at create time, else the definition's own. */
  instances?: SandboxInstanceStore
  /** The tenant the thread's sandbox was made for (`chat({ context: { tenantId } })`). */
  tenant?: string
}

/** Input of {@link SandboxSnapshots.fork}. */
export interface SandboxSnapshotForkInput {
  threadId: string
  checkpointId: string
  /** An empty thread (no checkpoints, messages or artifacts), other than `threadId`. */
  targetThreadId: string
}

/** Input of {@link SandboxSnapshots.readArtifact}. */
export interface SandboxSnapshotReadArtifactInput {
  threadId: string
  checkpointId: string
  /** The artifact's name as listed on the checkpoint. */
  name: string
}

/** What `withSandbox` uses of a {@link SandboxSnapshots}: not for applications. */
export interface SandboxSnapshotRuntime {
  readonly persistence: SandboxSnapshotPersistence
  readonly leaseTtlMs: number
  /** Take the thread's writer lease for `owner`, or fail with `lease-held`. */
  acquire: (threadId: string, owner: string) => Promise<SandboxCheckpointLease>
  /** Append a checkpoint of `handle`'s workspace under `lease`. */
  checkpoint: (handle: SandboxHandle, input: { lease: SandboxCheckpointLease; kind: 'run' | 'save'; runId: string; label?: string; messageCount: number; secrets: readonly (SecretRef | string)[] }) => Promise<SandboxCheckpoint>
  /** Restore the thread's latest checkpoint into a new sandbox; `null` when the thread has none. */
  restoreLatest: (handle: SandboxHandle, threadId: string) => Promise<SandboxCheckpoint | null>
}

/** The key under which a {@link SandboxSnapshots} carries its {@link SandboxSnapshotRuntime}. */
export const SNAPSHOT_RUNTIME: unique symbol = Symbol.for('@tanstack/ai-sandbox/snapshot-runtime') as never

/** Portable snapshots of threads: what `createSandboxSnapshots` returns. */
export interface SandboxSnapshots {
  /** The persistence value: hand it to `withPersistence` (spec 000: the same value in both places). */
  readonly persistence: SandboxSnapshotPersistence
  /**
   * Checkpoint the thread's live sandbox now, under a label (a user-marked
   * state). Needs a reusable sandbox (`reuse: 'thread'`) that is live for
   * the thread; covers the transcript and artifacts stored so far.
   * @throws SandboxSnapshotError `not-reusable`, `no-live-sandbox`,
   *   `lease-held` (a run of the thread is writing: save after it ends),
   *   `lease-lost`, `head-moved`, or a capture's own reasons.
   * @throws SandboxConfigError for bad input, naming the field.
   */
  save: (input: SandboxSnapshotSaveInput) => Promise<SandboxCheckpoint>
  /**
   * Branch a new thread from a selected checkpoint (not the latest unless
   * selected): the checkpoint, the transcript it covers and its artifacts,
   * copied in one transaction. The new thread's first run restores it.
   * @throws SandboxSnapshotError `fork-unsupported`, `checkpoint-not-found`, `target-not-empty`.
   * @throws SandboxConfigError for bad input (also `targetThreadId` equal to `threadId`).
   */
  fork: (input: SandboxSnapshotForkInput) => Promise<SandboxCheckpoint>
  /**
   * An artifact of a checkpoint with its bytes, verified against its
   * SHA-256. Authorize the caller for `threadId` first: this checks only that
   * the checkpoint belongs to the thread, and makes no HTTP response.
   * @throws SandboxSnapshotError `checkpoint-not-found`, `artifact-not-found`, `blob-missing`, `blob-mismatch`.
   */
  readArtifact: (input: SandboxSnapshotReadArtifactInput) => Promise<{ artifact: SandboxArtifact; bytes: Uint8Array }>
  /** The thread's latest checkpoint, or `null`. @throws SandboxConfigError when `threadId` is not a non-empty string. */
  latest: (threadId: string) => Promise<SandboxCheckpoint | null>
  /** Every checkpoint of the thread, oldest first. @throws SandboxConfigError when `threadId` is not a non-empty string. */
  list: (threadId: string) => Promise<SandboxCheckpoint[]>
  readonly [SNAPSHOT_RUNTIME]: SandboxSnapshotRuntime
}

const definitionSchema = z.custom<SandboxDefinition>((v) => typeof v === 'object' && v !== null && typeof (v as SandboxDefinition).ensure === 'function' && typeof (v as SandboxDefinition).key === 'function', { message: 'expected the result of defineSandbox({ ... })' })
const policySchema = z.unknown()
const threadId = z.string({ error: 'expected a thread id string' }).min(1, 'expected a non-empty thread id')

const optionsSchema = z
  .object({
    persistence: snapshotPersistenceSchema,
    sandbox: definitionSchema.optional(),
    instances: instanceStoreSchema.optional(),
    policy: policySchema.optional(),
    maxFileBytes: z.number().int('expected whole bytes').positive('expected a positive number of bytes').optional(),
    leaseTtlMs: z.number().int('expected whole ms').min(1_000, 'expected at least 1000 ms').optional(),
  })
  .strict()

const saveSchema = z
  .object({
    threadId,
    runId: z.string({ error: 'expected the run id string' }).min(1, 'expected a non-empty run id'),
    label: z.string({ error: 'expected a label string' }).min(1, 'expected a non-empty label').max(200, 'expected at most 200 characters'),
    sandbox: definitionSchema.optional(),
    instances: instanceStoreSchema.optional(),
    tenant: z.string().optional(),
  })
  .strict()

const forkSchema = z.object({ threadId, checkpointId: z.string({ error: 'expected a checkpoint id string' }).min(1), targetThreadId: threadId }).strict()
const readArtifactSchema = z.object({ threadId, checkpointId: z.string({ error: 'expected a checkpoint id string' }).min(1, 'expected a non-empty checkpoint id'), name: z.string({ error: 'expected an artifact name string' }).min(1, 'expected a non-empty artifact name') }).strict()

/**
 * Portable snapshots over `persistence`: `withSandbox(sandbox, { snapshots })`
 * checkpoints the workspace after each successful run and restores the latest
 * checkpoint into a new sandbox; the returned object's `save`, `fork` and
 * `readArtifact` are for the server. Source: spec 000 "Portable sandbox snapshots".
 *
 * @param options - `persistence` (required), `sandbox` and `instances` for `save`, `policy` (default `defaultSandboxSnapshotPolicy()`), `maxFileBytes` (default 64 MiB), `leaseTtlMs` (default 60 000).
 * @returns A {@link SandboxSnapshots}.
 * @throws SandboxConfigError for bad options, naming the field.
 * @example
 * ```ts
 * const snapshots = createSandboxSnapshots({ persistence, sandbox, instances })
 * chat({ adapter, messages, threadId, runId, middleware: [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })] })
 * ```
 */
export function createSandboxSnapshots(options: SandboxSnapshotsOptions): SandboxSnapshots {
  const parsed = parseOptions(optionsSchema, options, 'createSandboxSnapshots')
  const policy = options.policy === undefined ? undefined : options.policy
  if (policy !== undefined) resolveSnapshotPolicy(policy, 'createSandboxSnapshots.policy')
  const { stores } = options.persistence
  const leaseTtlMs = parsed.leaseTtlMs ?? DEFAULT_SNAPSHOT_LEASE_TTL_MS

  const runtime: SandboxSnapshotRuntime = {
    persistence: options.persistence,
    leaseTtlMs,
    acquire: async (thread, owner) => {
      const lease = await stores.checkpoints.acquireLease(thread, { owner, ttlMs: leaseTtlMs })
      if (!lease) throw new SandboxSnapshotError('lease-held', `Another writer holds the snapshot lease of thread ${JSON.stringify(thread)} (one writer per thread): a run of the thread is in progress (in this process or on another host), or a save is. Try again when it has ended; a lease of a host that died expires after leaseTtlMs (${leaseTtlMs} ms), and a run whose chat() stream was abandoned without aborting it keeps its lease.`)
      return lease
    },
    checkpoint: async (handle, input) => {
      const { lease } = input
      const head = await stores.checkpoints.head(lease.threadId)
      const capture = await captureSandboxWorkspace(handle, {
        putBlob: (sha256, bytes) => stores.blobs.put(sha256, bytes),
        secrets: input.secrets,
        ...(policy === undefined ? {} : { policy }),
        ...(parsed.maxFileBytes === undefined ? {} : { maxFileBytes: parsed.maxFileBytes }),
      })
      const artifacts = await stores.artifacts.list(lease.threadId)
      const result = await stores.checkpoints.append({
        lease,
        expectedHead: head?.checkpointId ?? null,
        checkpoint: {
          threadId: lease.threadId,
          checkpointId: randomUUID(),
          kind: input.kind,
          runId: input.runId,
          ...(input.label === undefined ? {} : { label: input.label }),
          manifest: capture.manifest,
          manifestSha256: capture.manifestSha256,
          messageCount: input.messageCount,
          artifacts,
          createdAt: Date.now(),
        },
      })
      if (result.ok) return result.checkpoint
      if (result.reason === 'lease-lost') throw new SandboxSnapshotError('lease-lost', `The snapshot lease of thread ${JSON.stringify(lease.threadId)} was lost before the checkpoint was written (it expired and another writer took it, or it was released); nothing was written and the previous checkpoint stays the latest.`)
      throw new SandboxSnapshotError('head-moved', `Another checkpoint of thread ${JSON.stringify(lease.threadId)} was written while this one was captured; nothing was written. Capture again on the new head.`)
    },
    restoreLatest: async (handle, thread) => {
      const head = await stores.checkpoints.head(thread)
      if (!head) return null
      await restoreSandboxWorkspace(handle, {
        manifest: head.manifest,
        manifestSha256: head.manifestSha256,
        getBlob: (sha256) => stores.blobs.get(sha256),
        ...(policy === undefined ? {} : { policy }),
        ...(parsed.maxFileBytes === undefined ? {} : { maxFileBytes: parsed.maxFileBytes }),
      })
      return head
    },
  }

  const save: SandboxSnapshots['save'] = async (raw) => {
    const input = parseOptions(saveSchema, raw, 'snapshots.save')
    const sandbox = raw.sandbox ?? options.sandbox
    if (!sandbox) parseOptions(z.custom(() => false, { message: 'expected the sandbox definition: pass it to createSandboxSnapshots({ sandbox }) or to save({ sandbox })' }), undefined, 'snapshots.save.sandbox')
    const definition = sandbox as SandboxDefinition
    if (definition.lifecycle.reuse !== 'thread') throw new SandboxSnapshotError('not-reusable', `snapshots.save: sandbox ${JSON.stringify(definition.id)} has reuse: 'none', so no sandbox outlives its run to be saved; a named checkpoint needs lifecycle: { reuse: 'thread' }.`)
    const instances = raw.instances ?? options.instances ?? definition.instances
    const key = definition.key({ threadId: input.threadId, runId: input.runId, ...(input.tenant === undefined ? {} : { tenant: input.tenant }) })
    const record = await instances.get(key)
    const resumed = record && record.provider === definition.provider.name ? await definition.provider.resume({ id: record.providerSandboxId }) : null
    if (!resumed) throw new SandboxSnapshotError('no-live-sandbox', `snapshots.save: thread ${JSON.stringify(input.threadId)} has no live sandbox${record ? ` (its recorded sandbox ${record.providerSandboxId} is gone)` : ' in the instance store'}; save while the thread's sandbox is kept (reuse: 'thread', within keepAlive), with the same instance store withSandbox uses.`)
    const handle = withWorkspaceSecrets(resumed, definition.workspace)
    const lease = await runtime.acquire(input.threadId, `save:${input.runId}:${randomUUID()}`)
    try {
      const messageCount = (await stores.messages.list(input.threadId)).length
      return await runtime.checkpoint(handle, { lease, kind: 'save', runId: input.runId, label: input.label, messageCount, secrets: Object.values(definition.workspace.secrets) })
    } finally {
      await stores.checkpoints.releaseLease(lease)
    }
  }

  const fork: SandboxSnapshots['fork'] = async (raw) => {
    const input = parseOptions(forkSchema, raw, 'snapshots.fork')
    if (input.targetThreadId === input.threadId) parseOptions(z.custom(() => false, { message: 'expected a thread other than threadId: a fork makes a new thread' }), input.targetThreadId, 'snapshots.fork.targetThreadId')
    const forkFrom = stores.checkpoints.forkFromCheckpoint
    if (!forkFrom) throw new SandboxSnapshotError('fork-unsupported', 'snapshots.fork: the checkpoint store has no forkFromCheckpoint, which a fork needs (it copies the checkpoint and its conversation in one transaction). Use a store that implements it: the in-memory, SQLite and PostgreSQL ones do.')
    const result = await forkFrom.call(stores.checkpoints, { threadId: input.threadId, checkpointId: input.checkpointId, targetThreadId: input.targetThreadId, newCheckpointId: randomUUID(), createdAt: Date.now() })
    if (result.ok) return result.checkpoint
    if (result.reason === 'not-found') throw new SandboxSnapshotError('checkpoint-not-found', `snapshots.fork: thread ${JSON.stringify(input.threadId)} has no checkpoint ${JSON.stringify(input.checkpointId)}.`)
    throw new SandboxSnapshotError('target-not-empty', `snapshots.fork: thread ${JSON.stringify(input.targetThreadId)} already has checkpoints, messages or artifacts; fork into a new thread id.`)
  }

  const readArtifact: SandboxSnapshots['readArtifact'] = async (raw) => {
    const input = parseOptions(readArtifactSchema, raw, 'snapshots.readArtifact')
    const checkpoint = await stores.checkpoints.get(input.threadId, input.checkpointId)
    if (!checkpoint) throw new SandboxSnapshotError('checkpoint-not-found', `snapshots.readArtifact: thread ${JSON.stringify(input.threadId)} has no checkpoint ${JSON.stringify(input.checkpointId)}.`)
    const artifact = checkpoint.artifacts.find((a) => a.name === input.name)
    if (!artifact) throw new SandboxSnapshotError('artifact-not-found', `snapshots.readArtifact: checkpoint ${JSON.stringify(input.checkpointId)} has no artifact ${JSON.stringify(input.name)}.`)
    const bytes = await stores.blobs.get(artifact.sha256)
    if (!bytes) throw new SandboxSnapshotError('blob-missing', `snapshots.readArtifact: the blob ${artifact.sha256} of artifact ${JSON.stringify(input.name)} is missing from the blob store (deleted by hand?).`)
    if (bytes.length !== artifact.size || createHash('sha256').update(bytes).digest('hex') !== artifact.sha256) throw new SandboxSnapshotError('blob-mismatch', `snapshots.readArtifact: the stored bytes of artifact ${JSON.stringify(input.name)} do not match its SHA-256 ${artifact.sha256}.`)
    return { artifact, bytes }
  }

  return Object.freeze({
    persistence: options.persistence,
    save,
    fork,
    readArtifact,
    latest: async (thread: string) => stores.checkpoints.head(parseOptions(threadId, thread, 'snapshots.latest.threadId')),
    list: async (thread: string) => stores.checkpoints.list(parseOptions(threadId, thread, 'snapshots.list.threadId')),
    [SNAPSHOT_RUNTIME]: runtime,
  })
}

/** Options of {@link memorySandboxSnapshots}. */
export type MemorySandboxSnapshotsOptions = Omit<SandboxSnapshotsOptions, 'persistence'>

/**
 * Portable snapshots kept in this process's memory, for local examples and
 * tests (spec 000's example): {@link createSandboxSnapshots} over
 * `createInMemorySandboxPersistence()`. Gone at exit.
 *
 * @param options - As {@link createSandboxSnapshots} without `persistence`.
 * @returns A promise of the {@link SandboxSnapshots} (async like the stores a database needs).
 * @throws SandboxConfigError for bad options, naming the field.
 * @example
 * ```ts
 * const snapshots = await memorySandboxSnapshots({ sandbox, instances })
 * const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { instances, snapshots })]
 * ```
 */
export async function memorySandboxSnapshots(options: MemorySandboxSnapshotsOptions = {}): Promise<SandboxSnapshots> {
  // Its own check first, so a `persistence` passed here (which would be ignored) is refused under this function's name.
  parseOptions(optionsSchema.omit({ persistence: true }), options, 'memorySandboxSnapshots')
  return createSandboxSnapshots({ ...options, persistence: createInMemorySandboxPersistence() })
}

/** Validates the `snapshots` option of `withSandbox`. */
export const sandboxSnapshotsSchema = z.custom<SandboxSnapshots>((v) => typeof v === 'object' && v !== null && SNAPSHOT_RUNTIME in v, { message: 'expected the result of createSandboxSnapshots(...) or memorySandboxSnapshots(...)' })
