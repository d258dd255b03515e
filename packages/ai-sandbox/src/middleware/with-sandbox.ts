/**
 * `withSandbox`: the chat middleware that gives a run its sandbox. Setup reads
 * top to bottom: resolve the stores, wait for the turn of the sandbox key (runs
 * of one thread take turns), ensure the sandbox, register the run,
 * provide the capabilities, start the file events. Each file event also
 * ticks the run's chunk stream (`SandboxRunChunksCapability`, merged by the
 * harness adapter), so core streams its `sandbox.file` chunk while the agent
 * is silent; the tick itself is dropped in `onChunk`. While the model streams
 * it scrubs every chunk of the workspace's secrets (raw and encoded), records
 * the harness's tool calls and, at the adapter's `RUN_FINISHED`,
 * emits `file.changed` (the last point where a chunk still reaches the
 * stream). The terminal hooks end the run's liveness, stop the file events,
 * then apply the lifecycle: keep the sandbox for the thread, destroy it after
 * the run, or destroy it on an abort while the run is live (closing an
 * agent's pipe does not stop the agent; destroying its sandbox does). An abort
 * after a terminal hook destroys nothing.
 * Source: spec 000, "Lifecycle & resume", "Instance durability", "File-event hooks".
 */
import { defineChatMiddleware, type ChatMiddlewareContext, type StreamChunk } from '@tanstack/ai'
import { getSandboxRuntime, SandboxRuntimeCapability, type InternalLogger } from '@tanstack/ai/adapter-internals'
import { getLocks, LocksCapability, type LockStore } from '@tanstack/ai/locks'
import { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import { getSandboxInstanceStore, SandboxInstanceStoreCapability, type SandboxInstanceStore } from '../definition/instance-store.js'
import { parseOptions } from '../definition/validate.js'
import { resolveSecretEnv } from '../workspace/define-workspace.js'
import { WorkspaceBootstrapError } from '../workspace/errors.js'
import { provideSandboxPolicy, SandboxPolicyCapability } from '../workspace/policy.js'
import { PROJECTION_MARKER, ProjectionCapability, projectWorkspace, provideProjection } from '../workspace/projection.js'
import { namedSecretValues } from '../workspace/secrets.js'
import { createSecretScrubber, type ChunkStreamScrubber, type SecretScrubber } from '../secrets/secret-scrubber.js'
import { redactingLogger, scrubLoggerSink } from './redacting-logger.js'
import { queueThreadRun } from './thread-runs.js'
import { FILE_CHANGED_EVENT, startRunFileEvents, type FileEventSink, type RunFileEvents } from '../watch/run-file-events.js'
import { provideSandbox, provideSandboxRunChunks, SandboxCapability, SandboxRunChunksCapability } from './capabilities.js'
import { createRunChunks, SANDBOX_FLUSH_EVENT, type RunChunks } from './run-chunks.js'
import { createToolHistory, withoutSandboxToolCalls, type ToolHistory } from './tool-history.js'

/** Options of {@link withSandbox}. */
export interface SandboxMiddlewareOptions {
  /** Instance store. Wins over `SandboxInstanceStoreCapability`, which wins over the definition's in-memory store. */
  instances?: SandboxInstanceStore
  /** Lock store for `ensure`. Wins over `LocksCapability` (`withLocks`), which wins over a process-wide in-memory lock. */
  locks?: LockStore
}

/** What one run holds between setup and its terminal hook. */
interface RunState {
  readonly key: string
  readonly handle: SandboxHandle
  readonly instances: SandboxInstanceStore
  readonly logger: InternalLogger | undefined
  /** Destroy after the run whatever the lifecycle says (no threadId was given). */
  readonly destroyAfterRun: boolean
  /** The harness's tool calls seen in the model stream. */
  readonly history: ToolHistory
  /** The workspace's secrets, read at setup: every chunk, diff and log line of the run passes it. */
  readonly scrubber: SecretScrubber
  /** The run's chunks as one stream for the scrubber (deltas are scrubbed across chunk boundaries). */
  readonly chunkScrub: ChunkStreamScrubber
  /** Lets the next run of this sandbox key start (runs of one thread are serialized). Idempotent. */
  readonly releaseTurn: () => void
  /** The run's file events (absent with `fileEvents: false` or when they failed to start). */
  files?: RunFileEvents
  /** `file.changed` values queued as `sandbox.file.diff` chunks, renamed as they pass. */
  readonly fileDiffs: Set<object>
  /** The run's `sandbox.flush` ticks (`SandboxRunChunksCapability`). */
  readonly chunks: RunChunks
  /** Set by the first terminal hook: from then on an abort destroys nothing. */
  ended?: boolean
  /** The adapter's RUN_FINISHED passed: the agent is done, so an abort from now on (the client may abort the moment it sees the end) is a late one. */
  agentFinished?: boolean
  /** Removes the setup's abort listener. */
  forgetAbort?: () => void
  destroying?: Promise<void>
}

/** What setup found before the sandbox is ensured. */
interface RunSetup {
  readonly key: string
  readonly logger: InternalLogger | undefined
  readonly instances: SandboxInstanceStore
  readonly locks: LockStore | undefined
  readonly ensureCtx: { threadId: string; runId: string; tenant?: string }
  readonly scrubber: SecretScrubber
  readonly releaseTurn: () => void
}

const storeSchema = z.custom<SandboxInstanceStore>(
  (v) => typeof v === 'object' && v !== null && ['get', 'upsert', 'delete'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
  { message: 'expected a SandboxInstanceStore (get, upsert, delete)' },
)
const optionsSchema = z
  .object({
    instances: storeSchema.optional(),
    locks: z.custom<LockStore>((v) => typeof v === 'object' && v !== null && typeof (v as LockStore).withLock === 'function', { message: 'expected a LockStore (withLock)' }).optional(),
  })
  .strict()

/**
 * Provide a sandbox to a `chat()` run. Harness adapters that declare
 * `requires: [SandboxCapability]` read it with `getSandbox(options.capabilities)`.
 *
 * Lifecycle: `reuse: 'thread'` keeps one sandbox per thread across runs (and
 * `keepAlive` destroys it after idling); `reuse: 'none'` or
 * `destroyOnComplete` destroys it after the run (after the last of several
 * concurrent runs of the thread); an abort while the run is live destroys it,
 * and an abort after the run ended (web frameworks abort a request's signal
 * after a normal response) does not. Runs of one sandbox key take turns in
 * this process (a second run of the thread waits in setup until the first
 * reached its terminal hook), so each run's file events are its own work.
 * Every chunk passed on, every `file.changed` diff and every log line of the
 * run (core's own categories too) has the workspace's secrets removed, raw and
 * encoded (base64, base64url, URL, hex; see docs/events.md).
 * The tenant comes from `chat({ context: { tenantId } })` when present.
 * Transitions log under the `sandbox` debug category (`chat({ debug: { sandbox: true } })`).
 *
 * @param sandbox - A definition from `defineSandbox`.
 * @param options - Optional `instances` and `locks` stores.
 * @throws SandboxConfigError for invalid options (at call time).
 * @example
 * ```ts
 * chat({ adapter, messages, threadId, middleware: [withSandbox(sandbox)] })
 * ```
 */
export function withSandbox(sandbox: SandboxDefinition, options: SandboxMiddlewareOptions = {}) {
  if (typeof sandbox !== 'object' || sandbox === null || typeof sandbox.ensure !== 'function') {
    parseOptions(z.custom(() => false, { message: 'expected the result of defineSandbox({ ... })' }), sandbox, 'withSandbox.sandbox')
  }
  const parsed = parseOptions(optionsSchema, options, 'withSandbox.options')
  const runs = new WeakMap<object, RunState>()

  function destroyRun(state: RunState, why: string): Promise<void> {
    state.destroying ??= (async () => {
      await state.files?.stop({ flush: false })
      state.logger?.sandbox(`destroying sandbox ${state.handle.id} (${why})`)
      try {
        await sandbox.destroy({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
      } finally {
        // The record may already be gone (another run destroyed it); make sure the handle is too.
        await state.handle.destroy()
      }
    })()
    return state.destroying
  }

  /**
   * Emit `file.changed` for the run's changed files. Each goes out through the
   * runtime's file-diff queue, behind the `sandbox.file` chunks still queued
   * there, and is renamed from `sandbox.file.diff` when it passes `onChunk`;
   * `ctx.emitCustomEvent` would overtake them.
   */
  async function reportFileChanges(ctx: ChatMiddlewareContext, state: RunState): Promise<void> {
    if (!state.files) return
    await state.files.flush()
    const runtime = getSandboxRuntime(ctx, { optional: true })
    for (const { path, diff, ...flags } of await state.files.changes()) {
      // The stream reaches clients and event logs: no workspace secret value, raw or encoded, travels in a diff.
      // `flags`: `tooLarge`/`size` or `notRegular` when the content was not read (see FileChange).
      const change = { path: state.scrubber.text(path), diff: state.scrubber.text(diff), ...flags }
      if (!runtime) {
        ctx.emitCustomEvent(FILE_CHANGED_EVENT, change)
        continue
      }
      state.fileDiffs.add(change)
      runtime.emitFileDiff(change)
    }
  }

  /**
   * Start the run's file events; a failure to start is logged and the run goes
   * on without them. Each event handed to core's runtime (which queues its
   * `sandbox.file` chunk) also ticks the run's chunks, so core drains the queue now.
   */
  async function startFileEvents(ctx: ChatMiddlewareContext, state: RunState): Promise<RunFileEvents | undefined> {
    const { handle, logger } = state
    const runtime = getSandboxRuntime(ctx, { optional: true })
    const sink: FileEventSink | undefined = runtime && {
      emit: (event) => {
        runtime.emit(event)
        state.chunks.tick()
      },
    }
    try {
      return await startRunFileEvents({ handle, hooks: sandbox.hooks, redactPath: state.scrubber.text, ...(sink ? { runtime: sink } : {}), ...(logger ? { logger } : {}) })
    } catch (error) {
      logger?.errors(`withSandbox: file events for sandbox ${handle.id} could not start; the run goes on without them`, { error })
      return undefined
    }
  }

  /** The run reached a terminal hook: it is no longer live, so a later abort must not destroy the sandbox. */
  function endRun(state: RunState): void {
    state.ended = true
    state.forgetAbort?.()
    state.chunks.close()
  }

  /** Run a terminal hook's work, then let the thread's next run start, whatever happened. */
  async function thenRelease(ctx: ChatMiddlewareContext, work: (state: RunState) => Promise<void>): Promise<void> {
    const state = runs.get(ctx)
    if (!state) return
    try {
      await work(state)
    } finally {
      state.releaseTurn()
    }
  }

  /** A run whose agent finished: keep the sandbox for the thread, or destroy it when the lifecycle says so. */
  async function finishRun(ctx: ChatMiddlewareContext): Promise<void> {
    const state = runs.get(ctx)
    if (!state) return
    endRun(state)
    await state.files?.stop({ flush: true })
    if (sandbox.lifecycle.reuse === 'none' || state.destroyAfterRun) return destroyRun(state, `run finished, ${state.destroyAfterRun ? 'no threadId' : "reuse 'none'"}`)
    const stillUsed = sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
    if (!sandbox.lifecycle.destroyOnComplete) return void state.logger?.sandbox(`keeping sandbox ${state.handle.id} for thread ${ctx.threadId}`)
    // A shared thread sandbox goes when the LAST run on it finishes, never under another run's feet.
    if (stillUsed === 0) return destroyRun(state, 'run finished, destroyOnComplete')
    state.logger?.sandbox(`keeping sandbox ${state.handle.id}: ${stillUsed} other run(s) of thread ${ctx.threadId} still use it; the last one destroys it (destroyOnComplete)`)
  }

  /** Setup once the run has its turn: ensure the sandbox, register the run, provide the capabilities, start the file events. */
  async function setupRun(ctx: ChatMiddlewareContext, { key, logger, instances, locks, ensureCtx, scrubber, releaseTurn }: RunSetup): Promise<void> {
    const generatedThread = sandbox.lifecycle.reuse === 'thread' && GENERATED_THREAD_ID.test(ctx.threadId)
    if (generatedThread) {
      logger?.warn(`withSandbox: chat() was called without a threadId, so this run's sandbox can never be reused; it is destroyed after the run. Pass chat({ threadId }) to keep one sandbox per conversation.`)
    }
    const handle = await sandbox.ensure({ ...ensureCtx, instances, ...(locks ? { locks } : {}), ...(logger ? { logger } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) })

    const state: RunState = { key, handle, instances, logger, destroyAfterRun: generatedThread, history: createToolHistory(), scrubber, chunkScrub: scrubber.stream(), releaseTurn, fileDiffs: new Set(), chunks: createRunChunks() }
    runs.set(ctx, state)
    // An abort must stop the agent even while the adapter is blocked inside a
    // command, and an abort that landed while ensure() ran must not leak the
    // sandbox. Only while the run is live: the terminal hooks remove the listener.
    const onAbort = () => {
      if (state.ended) return
      void destroyRun(state, 'run aborted').catch((error: unknown) => logger?.errors('sandbox destroy on abort failed', { error }))
    }
    if (ctx.signal?.aborted) onAbort()
    else if (ctx.signal) {
      const signal = ctx.signal
      signal.addEventListener('abort', onAbort, { once: true })
      state.forgetAbort = () => signal.removeEventListener('abort', onAbort)
    }

    provideSandbox(ctx, handle)
    provideSandboxRunChunks(ctx, state.chunks.stream)
    provideSandboxPolicy(ctx, sandbox.policy)
    provideProjection(ctx, {
      workspace: sandbox.workspace,
      workspaceHash: sandbox.workspace.hash,
      workspaceRoot: handle.workspaceRoot,
      resolveSecretEnv: () => resolveSecretEnv(sandbox.workspace),
      project: (projection) => {
        // What the harness generates for itself (MCP config with resolved secrets, skill folders) is not the agent's work.
        state.files?.exclude([PROJECTION_MARKER, ...(projection.paths ?? [])])
        return projectWorkspace(handle, sandbox.workspace, projection, undefined, sandbox.policy)
      },
    })
    if (sandbox.fileEvents && !ctx.signal?.aborted) {
      state.files = await startFileEvents(ctx, state)
      if (state.destroying) await state.files?.stop({ flush: false }) // aborted while it started
    }
  }

  return defineChatMiddleware({
    name: 'sandbox',
    provides: [SandboxCapability, SandboxPolicyCapability, ProjectionCapability, SandboxRunChunksCapability],
    optionalRequires: [LocksCapability, SandboxInstanceStoreCapability, SandboxRuntimeCapability],
    async setup(ctx) {
      // Everything this run logs has the workspace's secrets removed, raw and encoded (a secret can sit in a file
      // name, an error, a tool result): what this package logs, and what core logs itself (its sink is wrapped).
      const scrubber = createSecretScrubber(namedSecretValues(Object.values(sandbox.workspace.secrets)))
      const coreLogger = getSandboxRuntime(ctx, { optional: true })?.logger
      if (!scrubber.empty) scrubLoggerSink(coreLogger, scrubber.fragments)
      const logger = redactingLogger(coreLogger, scrubber.fragments)
      const instances = parsed.instances ?? getSandboxInstanceStore(ctx, { optional: true }) ?? sandbox.fallbackInstances
      const locks = parsed.locks ?? getLocks(ctx, { optional: true })
      const tenant = tenantOf(ctx)
      const ensureCtx = { threadId: ctx.threadId, runId: ctx.runId, ...(tenant ? { tenant } : {}) }
      const key = sandbox.key(ensureCtx)
      logger?.sandbox(`ensure ${key} for thread ${ctx.threadId} run ${ctx.runId}`)
      // One run of a sandbox at a time: a second run of the thread waits here, so its file events are its own work.
      const releaseTurn = await queueThreadRun(sandbox, key, ctx.signal, () => logger?.sandbox(`run ${ctx.runId} waits for the run of thread ${ctx.threadId} in progress on ${key}`))
      try {
        // Aborted while it waited: it never started, so it must not touch (or destroy) the sandbox the other run uses.
        if (ctx.signal?.aborted) throw new WorkspaceBootstrapError('aborted', `withSandbox: run ${ctx.runId} was aborted while it waited for the run of thread ${ctx.threadId} in progress; it started nothing.`, { cause: ctx.signal.reason })
        await setupRun(ctx, { key, logger, instances, locks, ensureCtx, scrubber, releaseTurn })
      } catch (error) {
        releaseTurn()
        throw error
      }
    },
    onConfig(_ctx, config) {
      // The harness already holds its own tool history; the model request gets the transcript without it.
      const providerMessages = withoutSandboxToolCalls(config.providerMessages ?? config.messages)
      return providerMessages ? { providerMessages } : undefined
    },
    async onChunk(ctx, chunk) {
      // The tick has done its job by arriving: core drains its queued sandbox.file chunks right after this chunk.
      if (chunk.type === 'CUSTOM' && chunk.name === SANDBOX_FLUSH_EVENT) return null
      const state = runs.get(ctx)
      if (!state) return
      if (chunk.type === 'CUSTOM' && chunk.name === FILE_DIFF_EVENT && state.fileDiffs.delete(chunk.value as object)) return { ...chunk, name: FILE_CHANGED_EVENT }
      // Every chunk of every phase (a host tool's result too) leaves without a workspace secret, raw or encoded.
      const scrubbed = state.chunkScrub.push(chunk)
      if (ctx.phase !== 'modelStream') return passOn(chunk, scrubbed)
      const out = scrubbed.map((c) => state.history.observe(c))
      if (chunk.type === 'RUN_FINISHED' || chunk.type === 'RUN_ERROR') {
        const recorded = state.history.take((prefix) => ctx.createId(prefix))
        if (recorded.length > 0) ctx.messages = [...ctx.messages, ...recorded]
      }
      if (chunk.type === 'RUN_FINISHED') {
        state.agentFinished = true
        state.forgetAbort?.()
        await reportFileChanges(ctx, state)
      }
      return passOn(chunk, out)
    },
    onFinish: (ctx) => thenRelease(ctx, () => finishRun(ctx)),
    onAbort: (ctx) =>
      thenRelease(ctx, async (state) => {
        // The agent had already finished when the abort came: keep the lifecycle of a finished run.
        if (state.agentFinished) return finishRun(ctx)
        endRun(state)
        await destroyRun(state, 'run aborted')
      }),
    onError: (ctx) =>
      thenRelease(ctx, async (state) => {
        endRun(state)
        await state.files?.stop({ flush: true })
        if (sandbox.lifecycle.reuse === 'none' || state.destroyAfterRun) return destroyRun(state, "run failed, reuse 'none'")
        sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
      }),
  })


}

/** What `onChunk` returns for `chunk` when `out` is what should pass: nothing (unchanged), `null` (held back), one chunk or several. */
function passOn(chunk: StreamChunk, out: StreamChunk[]): StreamChunk | StreamChunk[] | null | undefined {
  if (out.length === 0) return null
  if (out.length === 1) return out[0] === chunk ? undefined : out[0]
  return out
}

/** Core's name for a per-file diff chunk queued through the sandbox runtime. */
const FILE_DIFF_EVENT = 'sandbox.file.diff'

/** The shape of the thread id `chat()` makes up when none is passed (`thread-<ms>-<random>`). */
const GENERATED_THREAD_ID = /^thread-\d{13}-[a-z0-9]{1,12}$/

/**
 * The run's tenant from `chat({ context: { tenantId } })`: a non-empty string,
 * or a finite number (as its decimal text). Absent, `null` or `''` means no
 * tenant. Anything else is refused rather than ignored, since ignoring it
 * would let two tenants share a sandbox.
 * @throws SandboxConfigError `context.tenantId`.
 */
function tenantOf(ctx: ChatMiddlewareContext): string | undefined {
  const context = ctx.context as { tenantId?: unknown } | null | undefined
  const tenant = context?.tenantId
  if (tenant === undefined || tenant === null || tenant === '') return undefined
  if (typeof tenant === 'string') return tenant
  if (typeof tenant === 'number' && Number.isFinite(tenant)) return String(tenant)
  throw new SandboxConfigError('context.tenantId', `withSandbox: chat({ context: { tenantId } }) must be a string or a finite number (got ${typeof tenant}); runs of different tenants never share a sandbox, so an unreadable tenant is refused rather than ignored.`)
}
