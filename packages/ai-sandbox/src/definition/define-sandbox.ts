/**
 * `defineSandbox`: a lazy sandbox definition; `ensure` finds or makes one run's
 * sandbox under a lock on the compound key, `destroy` tears one down.
 * Invariant: a sandbox whose bootstrap failed, or that lost a race to another
 * record (`claimRecord`), is destroyed and never recorded. One file: the types
 * and the one closure (timers, use counts, stores) belong together.
 * Design notes: docs/design/definition.md
 */
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { SandboxFileHookEvent } from '@tanstack/ai'
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxProvider } from '../contracts/provider.js'
import { bootstrapWorkspace, bootstrapWritesAnything, withWorkspaceSecrets } from '../workspace/bootstrap.js'
import { defineWorkspace, type ResolvedWorkspace } from '../workspace/define-workspace.js'
import { defineSandboxPolicy, type SandboxPolicy } from '../workspace/policy.js'
import { parseDuration, DURATION_PATTERN } from './duration.js'
import { setLongTimeout, type LongTimeout } from './long-timeout.js'
import { InMemorySandboxInstanceStore, instanceStoreSchema, type SandboxInstanceRecord, type SandboxInstanceStore } from './instance-store.js'
import { claimRecord } from './claim-record.js'
import { keyInputSchema, unknownKeyMessage, type SandboxDestroyResult, type SandboxInstanceKeyInput } from './instance-key-input.js'
import { findSnapshot, restoreFromSnapshot, snapshotAfterSetup, workspaceSnapshotKey } from './snapshot-lifecycle.js'
import { computeSandboxKey } from './sandbox-key.js'
import { parseOptions } from '../contracts/validate.js'

/** When a sandbox is reused and when it goes away. */
export interface SandboxLifecycle {
  /** `'thread'` (default): one sandbox per thread across runs. `'none'`: a fresh sandbox per run, destroyed after it. */
  reuse?: 'thread' | 'none'
  /**
   * With `reuse: 'thread'`, destroy the sandbox after it has been idle this
   * long after a run (ms or `'30m'`, `'2h'`, `'30d'`; any length, also past
   * the ~24.8 days a single `setTimeout` holds). The timer lives in this
   * process; a later run for the thread cancels it. Default: keep until destroyed.
   */
  keepAlive?: number | string
  /** Destroy after every successful run. Default `false` (`true` when `reuse` is `'none'`). */
  destroyOnComplete?: boolean
  /**
   * `'after-setup'` (the default when the provider has the `snapshots`
   * capability): snapshot each freshly bootstrapped sandbox; later runs of the
   * thread, and new threads of the same workspace, restore it and skip setup.
   * `'none'` turns it off. Ignored by providers without snapshots.
   */
  snapshot?: 'after-setup' | 'none'
  /**
   * Do not restore snapshots older than this (ms or `'24h'`, `'30m'`); the
   * next bootstrap replaces them. Only snapshots: a sandbox that still runs is
   * resumed whatever its age (`keepAlive` retires idle ones). Default: no limit.
   */
  snapshotMaxAge?: number | string
}

/**
 * Sandbox-scoped hooks. A hook that throws is logged, never fatal. The file
 * hooks fire for every file create/change/delete seen in the workspace while a
 * `chat()` run holds the sandbox (`fileEvents`), the catch-all `onFile` first;
 * `e.path` is absolute inside the sandbox, and `e.before()`, `e.after()`,
 * `e.diff()` read content on call (see `docs/events.md`).
 */
export interface SandboxHooks {
  /** Any file event. */
  onFile?: (event: SandboxFileHookEvent) => void | Promise<void>
  /** A file appeared. */
  onFileCreate?: (event: SandboxFileHookEvent) => void | Promise<void>
  /** A file's content or metadata changed. */
  onFileChange?: (event: SandboxFileHookEvent) => void | Promise<void>
  /** A file was removed. */
  onFileDelete?: (event: SandboxFileHookEvent) => void | Promise<void>
  /** The sandbox is ready for a run (created and bootstrapped, or resumed). */
  onReady?: (handle: SandboxHandle) => void | Promise<void>
  /** Creating, resuming or bootstrapping failed. */
  onError?: (error: unknown) => void | Promise<void>
  /** The sandbox was destroyed. */
  onDestroy?: () => void | Promise<void>
}

/** Input of {@link defineSandbox}. */
export interface SandboxDefinitionInput {
  /** Stable name of this definition (letters, digits, `.`, `_`, `-`); part of the sandbox key. */
  id: string
  provider: SandboxProvider
  /** Default: an empty workspace. */
  workspace?: ResolvedWorkspace
  lifecycle?: SandboxLifecycle
  /** Default: `defineSandboxPolicy({ default: 'allow' })`. */
  policy?: SandboxPolicy
  hooks?: SandboxHooks
  /**
   * Watch the workspace during each run: `sandbox.file` chunks, the file
   * hooks here and in middleware `sandbox` groups, and `file.changed` diffs
   * after the run. Default `true`; `false` turns all of it off.
   */
  fileEvents?: boolean
  /**
   * The instance store this definition uses when a call names none: `ensure`
   * and `withSandbox` without `instances` (and without the ambient
   * capability), `destroy({ key })` and the `keepAlive` timer. Bind your
   * durable store here so `sandbox.destroy({ key })` works from any process.
   * Default: an in-memory store (one process only).
   */
  instances?: SandboxInstanceStore
}

export type { SandboxDestroyResult, SandboxInstanceKeyInput } from './instance-key-input.js'

/** Per-run inputs of {@link SandboxDefinition.ensure}. */
export interface SandboxEnsureContext {
  threadId: string
  runId: string
  /** Runs of different tenants never share a sandbox. */
  tenant?: string
  /** Default: `sandbox.instances`. */
  instances?: SandboxInstanceStore
  /** Default: this definition's process-wide in-memory lock. */
  locks?: LockStore
  /** The `sandbox` debug category logger. */
  logger?: InternalLogger
  /** Aborting stops a bootstrap in progress (the half-made sandbox is destroyed). */
  signal?: AbortSignal
  /**
   * Called with every NEW sandbox (created and bootstrapped, or restored
   * from a provider snapshot) before it is recorded, never with a resumed
   * live one: `withSandbox({ snapshots })` restores the thread's latest
   * portable checkpoint here, before the run projects anything. When it
   * throws, the new sandbox is destroyed and `ensure` rejects with its error.
   */
  restore?: (handle: SandboxHandle) => Promise<unknown>
}

/** The resolved lifecycle. */
export interface ResolvedSandboxLifecycle {
  readonly reuse: 'thread' | 'none'
  /** Idle ms before destroy, or `undefined` for no timer. */
  readonly keepAliveMs?: number
  readonly destroyOnComplete: boolean
  /** Whether after-setup snapshots are taken and restored (false when the provider cannot). */
  readonly snapshot: 'after-setup' | 'none'
  /** Max snapshot age in ms, or `undefined` for no limit. */
  readonly snapshotMaxAgeMs?: number
}

/** A lazy sandbox definition. */
export interface SandboxDefinition {
  readonly id: string
  readonly provider: SandboxProvider
  readonly workspace: ResolvedWorkspace
  readonly lifecycle: ResolvedSandboxLifecycle
  readonly policy: SandboxPolicy
  readonly hooks: SandboxHooks
  /** Whether runs watch the workspace (`fileEvents`, default `true`). */
  readonly fileEvents: boolean
  /**
   * The store used when a call names none: `defineSandbox({ instances })`, or
   * an in-memory one. `withSandbox` uses it after its `instances` option and
   * `SandboxInstanceStoreCapability`; `destroy` and `release` default to it.
   */
  readonly instances: SandboxInstanceStore
  /** The same store as {@link SandboxDefinition.instances} (its earlier name). */
  readonly fallbackInstances: SandboxInstanceStore
  /** The compound key for a run (see `computeSandboxKey`). */
  key: (ctx: Pick<SandboxEnsureContext, 'threadId' | 'runId' | 'tenant'>) => string
  /** Resume or create the sandbox for a run. Serialised per key. */
  ensure: (ctx: SandboxEnsureContext) => Promise<SandboxHandle>
  /**
   * Destroy the sandbox recorded for a key and delete its record. Safe to
   * repeat: a key with no record resolves `{ destroyed: false, reason: 'unknown-key' }`.
   *
   * @returns Whether a sandbox was destroyed; when not, a message naming the store consulted.
   * @throws SandboxConfigError `sandbox.destroy.key` when the key is missing or not one of this definition's keys.
   * @example
   * ```ts
   * const result = await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
   * if (!result.destroyed) console.warn(result.message)
   * ```
   */
  destroy: (input: SandboxInstanceKeyInput) => Promise<SandboxDestroyResult>
  /**
   * End one run's use of the key's sandbox (each successful `ensure` counts one
   * use). When no run uses it any more, the `keepAlive` idle timer starts.
   * @returns How many runs still use the key's sandbox (0 when this was the last).
   * @throws SandboxConfigError `sandbox.release.key` as `destroy` does.
   */
  release: (input: SandboxInstanceKeyInput) => number
}

const providerSchema = z.custom<SandboxProvider>(
  (value) => {
    const p = value as Partial<SandboxProvider> | null
    return typeof p === 'object' && p !== null && typeof p.name === 'string' && ['capabilities', 'create', 'resume', 'destroy'].every((m) => typeof (p as Record<string, unknown>)[m] === 'function')
  },
  { message: 'expected a sandbox provider such as localProcessSandbox() or dockerSandbox({ image }) (an object with name, capabilities, create, resume and destroy)' },
)

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', { message: 'expected a function' })

const schema = z
  .object({
    id: z.string({ error: 'expected a string id, e.g. "repo-agent"' }).regex(/^[A-Za-z0-9._-]+$/, 'use letters, digits, ".", "_" and "-" only, e.g. "repo-agent"'),
    provider: providerSchema,
    workspace: z.custom<ResolvedWorkspace>((v) => typeof v === 'object' && v !== null && typeof (v as ResolvedWorkspace).hash === 'string', { message: 'expected the result of defineWorkspace({ ... })' }).optional(),
    lifecycle: z
      .object({
        reuse: z.enum(['thread', 'none']).optional(),
        keepAlive: z.union([z.number().nonnegative(), z.string().regex(DURATION_PATTERN, "expected a duration such as '30m', '2h' or a number of ms")]).optional(),
        destroyOnComplete: z.boolean().optional(),
        snapshot: z.enum(['after-setup', 'none']).optional(),
        snapshotMaxAge: z.union([z.number().nonnegative(), z.string().regex(DURATION_PATTERN, "expected a duration such as '24h', '30m' or a number of ms")]).optional(),
      })
      .strict()
      .optional(),
    policy: z.custom<SandboxPolicy>((v) => typeof v === 'object' && v !== null && 'default' in v && 'commands' in v, { message: 'expected the result of defineSandboxPolicy({ ... })' }).optional(),
    hooks: z
      .object({
        onReady: fn.optional(),
        onError: fn.optional(),
        onDestroy: fn.optional(),
        onFile: fn.optional(),
        onFileCreate: fn.optional(),
        onFileChange: fn.optional(),
        onFileDelete: fn.optional(),
      })
      .strict()
      .optional(),
    fileEvents: z.boolean().optional(),
    instances: instanceStoreSchema.optional(),
  })
  .strict()

/**
 * Define a sandbox. Lazy: creates nothing until a run calls `ensure`.
 *
 * @returns A {@link SandboxDefinition} to pass to `withSandbox`.
 * @throws SandboxConfigError naming the field, e.g. `defineSandbox.provider` when it is missing.
 * @example
 * ```ts
 * const sandbox = defineSandbox({
 *   id: 'repo-agent',
 *   provider: localProcessSandbox(),
 *   workspace: defineWorkspace({ setup: ['git init -q'] }),
 *   lifecycle: { reuse: 'thread', keepAlive: '30m' },
 *   hooks: { onFile: (e) => console.log(e.type, e.path) }, // file events of each run (fileEvents: true by default)
 * })
 * ```
 */
export function defineSandbox(input: SandboxDefinitionInput): SandboxDefinition {
  const parsed = parseOptions(schema, input, 'defineSandbox')
  const provider = parsed.provider
  const workspace = parsed.workspace ?? defineWorkspace()
  const policy = parsed.policy ?? defineSandboxPolicy()
  const hooks = (parsed.hooks ?? {}) as SandboxHooks
  const fileEvents = parsed.fileEvents ?? true
  const reuse = parsed.lifecycle?.reuse ?? 'thread'
  const keepAliveMs = parsed.lifecycle?.keepAlive === undefined ? undefined : parseDuration(parsed.lifecycle.keepAlive)
  const lifecycle: ResolvedSandboxLifecycle = Object.freeze({
    reuse,
    ...(keepAliveMs === undefined ? {} : { keepAliveMs }),
    destroyOnComplete: parsed.lifecycle?.destroyOnComplete ?? reuse === 'none',
    snapshot: provider.capabilities().snapshots && parsed.lifecycle?.snapshot !== 'none' ? 'after-setup' : 'none',
    ...(parsed.lifecycle?.snapshotMaxAge === undefined ? {} : { snapshotMaxAgeMs: parseDuration(parsed.lifecycle.snapshotMaxAge)! }),
  })
  const boundInstances = parsed.instances !== undefined
  const defaultInstances: SandboxInstanceStore = parsed.instances ?? new InMemorySandboxInstanceStore()
  /** Set when an `ensure` of this process used a store other than `defaultInstances` (for the unknown-key message). */
  let ensuredElsewhere = false
  const fallbackLocks = new InMemoryLockStore()
  /** The in-memory-store snapshot warning went out (once per definition). */
  let warnedLocalSnapshots = false
  const idleTimers = new Map<string, LongTimeout>()
  const inUse = new Map<string, number>()

  const keyBase = (tenant: string | undefined) => ({
    definitionId: parsed.id,
    provider: provider.name,
    ...(provider.fingerprint ? { providerFingerprint: provider.fingerprint } : {}),
    workspaceHash: workspace.hash,
    ...(tenant ? { tenant } : {}),
  })
  const snapshotKeyFor = (ctx: Pick<SandboxEnsureContext, 'tenant'>) => workspaceSnapshotKey(keyBase(ctx.tenant))

  const key: SandboxDefinition['key'] = (ctx) =>
    computeSandboxKey({
      definitionId: parsed.id,
      provider: provider.name,
      ...(provider.fingerprint ? { providerFingerprint: provider.fingerprint } : {}),
      workspaceHash: workspace.hash,
      threadId: ctx.threadId,
      runId: ctx.runId,
      reuse,
      ...(ctx.tenant ? { tenant: ctx.tenant } : {}),
    })

  const keyParts = key({ threadId: '', runId: '' }).split(':')
  const keyInput = keyInputSchema(keyParts)

  async function callHook<K extends keyof SandboxHooks>(name: K, logger: InternalLogger | undefined, ...args: Parameters<NonNullable<SandboxHooks[K]>>): Promise<void> {
    const hook = hooks[name] as ((...a: unknown[]) => unknown) | undefined
    if (!hook) return
    try {
      await hook(...args)
    } catch (error) {
      logger?.errors(`sandbox hook ${name} threw`, { error })
    }
  }

  const cancelIdleTimer = (sandboxKey: string) => {
    idleTimers.get(sandboxKey)?.cancel()
    idleTimers.delete(sandboxKey)
  }

  const destroy: SandboxDefinition['destroy'] = async (input) => {
    const { key: sandboxKey, instances = defaultInstances, logger } = parseOptions(keyInput, input, 'sandbox.destroy') as SandboxInstanceKeyInput
    cancelIdleTimer(sandboxKey)
    inUse.delete(sandboxKey)
    const record = await instances.get(sandboxKey)
    if (!record) {
      const message = unknownKeyMessage({ key: sandboxKey, storeGiven: input.instances !== undefined, bound: boundInstances, ensuredElsewhere })
      logger?.sandbox(message)
      return { destroyed: false, reason: 'unknown-key', message }
    }
    logger?.sandbox(`destroy ${sandboxKey} (${record.provider} ${record.providerSandboxId})`)
    await provider.destroy({ id: record.providerSandboxId })
    await instances.delete(sandboxKey)
    await callHook('onDestroy', logger)
    return { destroyed: true, providerSandboxId: record.providerSandboxId }
  }

  const ensure: SandboxDefinition['ensure'] = async (ctx) => {
    const sandboxKey = key(ctx)
    const instances = ctx.instances ?? defaultInstances
    if (instances !== defaultInstances) ensuredElsewhere = true
    const locks = ctx.locks ?? fallbackLocks
    const { logger } = ctx
    cancelIdleTimer(sandboxKey)
    return locks.withLock(`sandbox:${sandboxKey}`, async () => {
      try {
        const record = await instances.get(sandboxKey)
        const handle =
          (await resumeRecorded(record, instances, ctx)) ??
          (await restoreRecorded(sandboxKey, record, instances, ctx)) ??
          (await createAndBootstrap(sandboxKey, record, instances, ctx))
        inUse.set(sandboxKey, (inUse.get(sandboxKey) ?? 0) + 1)
        await callHook('onReady', logger, handle)
        return handle
      } catch (error) {
        await callHook('onError', logger, error)
        throw error
      }
    })
  }

  /** Step 1 of ensure: the recorded sandbox, if it is still there. */
  async function resumeRecorded(record: SandboxInstanceRecord | null, instances: SandboxInstanceStore, ctx: SandboxEnsureContext): Promise<SandboxHandle | null> {
    if (!record) return null
    const handle = record.provider === provider.name ? await provider.resume({ id: record.providerSandboxId }) : null
    if (!handle) {
      ctx.logger?.sandbox(`recorded sandbox for ${record.key} is gone`)
      return null
    }
    await instances.upsert({ ...record, latestRunId: ctx.runId, updatedAt: Date.now() })
    ctx.logger?.sandbox(`resumed ${record.key} (${handle.id})`)
    return withWorkspaceSecrets(handle, workspace)
  }

  /** Step 2 of ensure: a new sandbox from the after-setup snapshot of the thread or the workspace. */
  async function restoreRecorded(sandboxKey: string, record: SandboxInstanceRecord | null, instances: SandboxInstanceStore, ctx: SandboxEnsureContext): Promise<SandboxHandle | null> {
    if (lifecycle.snapshot === 'none') return null
    const workspaceKey = snapshotKeyFor(ctx)
    const candidate = await findSnapshot({ instances, threadRecord: record, workspaceKey, maxAgeMs: lifecycle.snapshotMaxAgeMs, now: Date.now(), ...(ctx.logger ? { logger: ctx.logger } : {}) })
    if (!candidate) return null
    const raw = await restoreFromSnapshot(provider, candidate, { key: sandboxKey, labels: labelsFor(sandboxKey), ...networkFor() }, ctx.logger)
    if (!raw) return null
    await restoreInto(raw, ctx)
    const kept = await claimRecord({
      provider,
      made: raw,
      record: { key: sandboxKey, provider: provider.name, providerSandboxId: raw.id, threadId: ctx.threadId, latestRunId: ctx.runId, latestSnapshotId: candidate.snapshotId, updatedAt: Date.now() },
      instances,
      ...(record ? { goneId: record.providerSandboxId } : {}),
      ...(ctx.logger ? { logger: ctx.logger } : {}),
    })
    return withWorkspaceSecrets(kept, workspace)
  }

  /** A new sandbox gets the caller's restore (a portable checkpoint) before it is recorded; a failed one is destroyed. */
  async function restoreInto(raw: SandboxHandle, ctx: SandboxEnsureContext): Promise<void> {
    if (!ctx.restore) return
    try {
      await ctx.restore(withWorkspaceSecrets(raw, workspace))
    } catch (error) {
      ctx.logger?.sandbox(`restoring the new sandbox ${raw.id} failed; destroying it`)
      await raw.destroy().catch((destroyError: unknown) => ctx.logger?.errors('destroying a sandbox whose restore failed failed', { error: destroyError }))
      throw error
    }
  }

  /** The network request of a policy that denies network (spec 000 "Policy": network block at create). */
  function networkFor(): { network?: 'blocked' } {
    return policy.capabilities.network ? {} : { network: 'blocked' }
  }

  function labelsFor(sandboxKey: string): Record<string, string> {
    return { 'tanstack.sandbox.key': sandboxKey, 'tanstack.sandbox.definition': parsed.id }
  }

  /** Step 3 of ensure: create, bootstrap, record, and (with snapshots) snapshot. */
  async function createAndBootstrap(sandboxKey: string, previous: SandboxInstanceRecord | null, instances: SandboxInstanceStore, ctx: SandboxEnsureContext): Promise<SandboxHandle> {
    ctx.logger?.sandbox(`creating sandbox for ${sandboxKey} with ${provider.name}`)
    const raw = await provider.create({ key: sandboxKey, labels: labelsFor(sandboxKey), ...networkFor() })
    const handle = withWorkspaceSecrets(raw, workspace)
    try {
      await bootstrapWorkspace(handle, workspace, ctx.signal)
    } catch (error) {
      ctx.logger?.sandbox(`bootstrap failed for ${sandboxKey}; destroying ${raw.id}`)
      await raw.destroy().catch((destroyError: unknown) => ctx.logger?.errors('destroying a half-made sandbox failed', { error: destroyError }))
      throw error
    }
    // An empty workspace without setup has nothing to restore: a snapshot would only leave an image behind.
    const worthSnapshotting = bootstrapWritesAnything(workspace)
    if (lifecycle.snapshot === 'after-setup' && !worthSnapshotting) ctx.logger?.sandbox(`no snapshot after setup for ${sandboxKey}: the workspace has no source, setup, skills or instructions`)
    if (lifecycle.snapshot === 'after-setup' && worthSnapshotting && parsed.instances === undefined && instances === defaultInstances && !warnedLocalSnapshots) {
      // Found by a new-user run: with the process-local store every process takes its own snapshot and forgets it at exit.
      warnedLocalSnapshots = true
      ctx.logger?.warn(
        `defineSandbox(${JSON.stringify(parsed.id)}): taking an after-setup snapshot with the in-memory instance store. Only this process can find it, and on ${provider.name} it outlives the process (on Docker an image of a few hundred MB), so each process that starts leaves one behind. ` +
          `Pass a persistent instance store (withSandbox(sandbox, { instances }), e.g. createSqliteStores(...).instances) so later processes restore and replace it, or set lifecycle: { snapshot: 'none' }.`,
      )
    }
    const snapshot =
      lifecycle.snapshot === 'after-setup' && worthSnapshotting
        ? await snapshotAfterSetup({ handle: raw, provider, instances, workspaceKey: snapshotKeyFor(ctx), threadId: ctx.threadId, ...(ctx.logger ? { logger: ctx.logger } : {}) })
        : null
    await restoreInto(raw, ctx)
    const kept = await claimRecord({
      provider,
      made: raw,
      record: { key: sandboxKey, provider: provider.name, providerSandboxId: raw.id, threadId: ctx.threadId, latestRunId: ctx.runId, ...(snapshot ? { latestSnapshotId: snapshot.snapshotId } : {}), updatedAt: Date.now() },
      instances,
      ...(previous ? { goneId: previous.providerSandboxId } : {}),
      ...(ctx.logger ? { logger: ctx.logger } : {}),
    })
    if (kept !== raw) return withWorkspaceSecrets(kept, workspace)
    ctx.logger?.sandbox(`created ${sandboxKey} (${handle.id})`)
    return handle
  }

  const release: SandboxDefinition['release'] = (raw) => {
    const input = parseOptions(keyInput, raw, 'sandbox.release') as SandboxInstanceKeyInput
    const left = Math.max(0, (inUse.get(input.key) ?? 0) - 1)
    if (left > 0) {
      inUse.set(input.key, left)
      return left
    }
    inUse.delete(input.key)
    if (lifecycle.keepAliveMs === undefined) return 0
    cancelIdleTimer(input.key)
    // Chunked: keepAlive may exceed the 2^31-1 ms a single setTimeout can hold (e.g. '30d').
    const timer = setLongTimeout(() => {
      idleTimers.delete(input.key)
      destroy(input).catch((error: unknown) => input.logger?.errors('idle sandbox destroy failed', { error }))
    }, lifecycle.keepAliveMs)
    idleTimers.set(input.key, timer)
    return 0
  }

  return Object.freeze({ id: parsed.id, provider, workspace, lifecycle, policy, hooks, fileEvents, instances: defaultInstances, fallbackInstances: defaultInstances, key, ensure, destroy, release })
}
