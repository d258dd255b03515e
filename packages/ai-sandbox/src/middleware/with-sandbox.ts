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
 * after a terminal hook destroys nothing. A durable run (`runs` AND
 * `durability` given, see `./durability.ts`) gets `SandboxDurabilityCapability`
 * for the harness and core's `DetachableRunCapability`; an abort of it with no
 * cancel recorded in either band detaches (the sandbox stays, the record gets
 * `detachedSince` + `sandboxKey`, `RunDetachedCapability` keeps the log open),
 * and a cancel destroys the sandbox whatever the lifecycle says. The state a
 * detach needs is registered right after `ensure()`, so an abort during the rest
 * of setup detaches too. A durable run's teardown touches the run (its
 * sandbox, processes, journal, record) only while this host still owns it
 * (`RunOwner`: a host paused past its lease may wake up after a successor took
 * the run over), and its journal goes only once the run's end is recorded
 * (`./journal-cleanup.ts`).
 * Source: spec 000, "Lifecycle & resume", "Instance durability", "File-event hooks",
 * "Takeover: detached runs and single-writer safety".
 */
import { defineChatMiddleware, DetachableRunCapability, isTerminalRunStatus, provideDetachableRun, provideRunDetached, RUN_CANCEL_REASON, wasCancelRequested, type AbortInfo, type ChatMiddlewareContext, type RunStore, type SandboxFileEvent, type StreamChunk } from '@tanstack/ai'
import { getPendingTurn, getRunDisconnect, getSandboxRuntime, PendingTurnCapability, RunDisconnectCapability, SandboxRuntimeCapability, type InternalLogger } from '@tanstack/ai/adapter-internals'
import { getLocks, LocksCapability, type LockStore } from '@tanstack/ai/locks'
import { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import { type SandboxInstanceStore } from '../definition/instance-store.js'
import { getSandboxInstanceStore, SandboxInstanceStoreCapability } from '../capabilities/tokens.js'
import { parseOptions } from '../contracts/validate.js'
import { resolveSecretEnv } from '../workspace/define-workspace.js'
import { WorkspaceBootstrapError } from '../workspace/errors.js'
import { provideSandboxPolicy, SandboxPolicyCapability } from '../capabilities/tokens.js'
import { PROJECTION_MARKER, projectWorkspace } from '../workspace/projection.js'
import { ProjectionCapability, provideProjection } from '../capabilities/tokens.js'
import { namedSecretValues } from '../secrets/secret-values.js'
import { createSecretScrubber, type ChunkStreamScrubber, type SecretScrubber } from '../secrets/secret-scrubber.js'
import { redactingLogger, scrubLoggerSink } from './redacting-logger.js'
import { queueThreadRun } from './thread-runs.js'
import { durableRunFiles } from '../journal/run-files.js'
import { journalDirOf } from '../journal/commands.js'
import { noteRunDetached } from '../durability/detach-notice.js'
import { FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT, startRunFileEvents, type FileEventSink, type RunFileEvents } from '../watch/run-file-events.js'
import { provideSandbox, provideSandboxRunChunks, SandboxCapability, SandboxRunChunksCapability } from '../capabilities/tokens.js'
import { createRunChunks, SANDBOX_FLUSH_EVENT, type RunChunks } from './run-chunks.js'
import { createToolHistory, withoutSandboxToolCalls, type ToolHistory } from './tool-history.js'
import { endJournaledRun } from '../harness/journal-run-end.js'
import { assertPromptWithinLimit } from '../harness/prompt-limit.js'
import { DurableRunIdRequiredError, DurableThreadIdRequiredError } from '../harness/durable-ids.js'
import { JournalAttachUnavailableError } from '../journal/attach-preflight.js'
import { assertValidRunId } from '../contracts/run-id.js'
import { isLockProbe, isUndetachedRunLister } from '../reaper/orphans.js'
import type { PumpEnd } from '../durability/run-outcome.js'
import { holdStartedRunLease, isTerminalChunk, settleStartedRun, type StartedRunLease } from './run-lease.js'
import { type SandboxDurabilityOptions } from '../durability/capability.js'
import { provideSandboxDurability, SandboxDurabilityCapability } from '../capabilities/tokens.js'
import { clearDetach, durabilityOptionShapes, inMemoryLockWarning, isCancel, isInMemoryLock, recordDetach, recordSandboxKey, resolveSandboxDurability, runOwner, watchForCancel, type ResolvedDurability, type RunOwner } from './durability.js'
import { cleanUpJournalOnceRecorded } from './journal-cleanup.js'

/** Options of {@link withSandbox}. */
export interface SandboxMiddlewareOptions {
  /** Instance store. Wins over `SandboxInstanceStoreCapability`, which wins over the definition's in-memory store. */
  instances?: SandboxInstanceStore
  /**
   * Lock store for `ensure`. Wins over `LocksCapability` (`withLocks`), which
   * wins over a process-wide in-memory lock. A durable run warns (once per
   * `withSandbox`) when the lock in effect is in-memory or absent: it cannot
   * coordinate hosts.
   */
  locks?: LockStore
  /**
   * The run record store, the SAME one chat persistence uses
   * (`persistence.stores.runs`). A run is durable only when `runs` AND
   * `durability` are given; one alone is today's behaviour, with no warning.
   * `withSandbox` creates the record of a run it starts before the sandbox
   * boots (`createOrResume`, spec 002) and patches it (`detachedSince`,
   * `sandboxKey`); an attach only patches it.
   */
  runs?: RunStore
  /**
   * The run's event log (`adapter`, the SAME instance the transport gets) and
   * the journal options: `attach` (an attach route only; default `false`),
   * `attachWaitMs` (ms, default 10 000), `journalDir` (absolute; default the
   * handle's own `journalDir`, else `/tmp/tanstack-runs`). Durable only
   * together with `runs`.
   */
  durability?: SandboxDurabilityOptions
  /**
   * On a durable run, an abort with no cancel recorded (neither
   * `requestRunCancel` on the record nor `RUN_CANCEL_REASON` as the abort
   * reason) detaches: the sandbox and its agent stay, the record gets
   * `detachedSince` (epoch ms) + `sandboxKey`. `false`: every abort destroys the
   * sandbox, as without durability. Default `true`. Ignored unless durable.
   */
  detachOnDisconnect?: boolean
}

/** What one run holds between setup and its terminal hook. */
interface RunState {
  readonly key: string
  readonly handle: SandboxHandle
  readonly instances: SandboxInstanceStore
  readonly logger: InternalLogger | undefined
  /** A sweep can find this run as an orphan if its detach is never recorded: the run store lists undetached runs and the lock store answers isHeld. */
  readonly orphansFindable: boolean
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
  /** The run's id (`ctx.runId`), the key of its record. */
  readonly runId: string
  /** Set on a durable run. */
  readonly durable: ResolvedDurability | undefined
  /** A durable run's owner (this host, as starter or as claimed driver): its teardown touches the run only while it still owns it. */
  readonly owner: RunOwner | undefined
  /** A durable run's abort verdict, decided once (the signal listener and `onAbort` share it): true for a cancel. */
  verdict?: Promise<boolean>
  /** The run's file events (absent with `fileEvents: false` or when they failed to start). */
  files?: RunFileEvents
  /** `file.changed` values queued as `sandbox.file.diff` chunks, renamed as they pass. */
  readonly fileDiffs: Set<object>
  /** The run's `sandbox.flush` ticks (`SandboxRunChunksCapability`). */
  readonly chunks: RunChunks
  /** Set by the first terminal hook: from then on an abort destroys nothing. */
  ended?: boolean
  /** The adapter's final RUN_FINISHED passed (not a tool-calling turn's): the agent is done, so an abort from now on (the client may abort the moment it sees the end) is a late one. */
  agentFinished?: boolean
  /** Removes the setup's abort listener. */
  forgetAbort?: () => void
  /** Stops a durable run's poll of its record for a remote cancel. */
  forgetCancel?: () => void
  /** The driver lease of a durable run this host started (not an attach), released after its terminal hook. */
  readonly lease: StartedRunLease | undefined
  /** The last RUN_FINISHED / RUN_ERROR of the model stream: how a started durable run's record is settled. */
  lastTerminal?: StreamChunk
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
  readonly durable: ResolvedDurability | undefined
  readonly owner: RunOwner | undefined
  readonly lease: StartedRunLease | undefined
}

const storeSchema = z.custom<SandboxInstanceStore>(
  (v) => typeof v === 'object' && v !== null && ['get', 'upsert', 'delete'].every((m) => typeof (v as Record<string, unknown>)[m] === 'function'),
  { message: 'expected a SandboxInstanceStore (get, upsert, delete)' },
)
const optionsSchema = z
  .object({
    instances: storeSchema.optional(),
    locks: z.custom<LockStore>((v) => typeof v === 'object' && v !== null && typeof (v as LockStore).withLock === 'function', { message: 'expected a LockStore (withLock)' }).optional(),
    ...durabilityOptionShapes,
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
 * Durable runs (spec 000 "Takeover"): with BOTH `runs` and `durability`, the
 * harness journals its agent (and tails the journal with `attach: true`), and an
 * abort with no cancel recorded detaches instead of destroying: the sandbox
 * stays whatever `destroyOnComplete` says, the record gets `detachedSince` +
 * `sandboxKey`, and the delivery log stays open for a takeover. A cancel in
 * either band (`requestRunCancel(runs, runId)`, or aborting with
 * `RUN_CANCEL_REASON`) destroys the sandbox whatever `destroyOnComplete` or
 * `keepAlive` say. A live durable run re-reads its record every
 * `durability.cancelPollMs` (default `DEFAULT_CANCEL_POLL_MS`, 1000 ms), so a
 * cancel recorded on another host stops it (abort with `RUN_CANCEL_REASON`,
 * sandbox destroyed) within one interval. A durable run that completes clears `detachedSince`.
 *
 * @param sandbox - A definition from `defineSandbox`.
 * @param options - Optional `instances` and `locks` stores; `runs` + `durability` (+ `detachOnDisconnect`, default `true`) for durable runs.
 * @throws SandboxConfigError for invalid options (at call time), naming the field.
 * @throws PromptTooLargeError `prompt-too-large` (from the run's setup, before any record, lease or sandbox exists) when the latest user message is longer than the limit the adapter declared with `declareHarnessPromptLimit` (Claude Code: 3,000,000 characters).
 * @throws DurableRunIdRequiredError `run-id-required` (from the run's setup, before any record, lease or sandbox exists) for a durable run without `chat({ runId })`.
 * @throws DurableThreadIdRequiredError `thread-id-required` (likewise) for an attach without `chat({ threadId })`.
 * @throws JournalAttachUnavailableError `unknown-run` (likewise) for an attach to a run the run store has no record of.
 * @throws InvalidRunIdError `invalid-run-id` (from the run's setup, before any lease, sandbox, journal or baseline exists) for a durable run whose `chat({ runId })` breaks the run-id rule of `assertValidRunId`.
 * @example
 * ```ts
 * chat({ adapter, messages, threadId, middleware: [withSandbox(sandbox)] })
 * // durable: the same runs store as persistence, the same log as the transport
 * chat({ adapter, messages, threadId, runId, middleware: [withSandbox(sandbox, { runs, durability: { adapter: log } })] })
 * ```
 */
export function withSandbox(sandbox: SandboxDefinition, options: SandboxMiddlewareOptions = {}) {
  if (typeof sandbox !== 'object' || sandbox === null || typeof sandbox.ensure !== 'function') {
    parseOptions(z.custom(() => false, { message: 'expected the result of defineSandbox({ ... })' }), sandbox, 'withSandbox.sandbox')
  }
  const parsed = parseOptions(optionsSchema, options, 'withSandbox.options')
  const durable = resolveSandboxDurability(parsed)
  const runs = new WeakMap<object, RunState>()
  /** The in-memory-lock warning went out (once per middleware instance). */
  let warnedLocks = false
  /** A run's detach write from the disconnect notification, which a terminal hook awaits before clearing it. */
  const noticed = new WeakMap<object, Promise<void>>()

  function destroyRun(state: RunState, why: string): Promise<void> {
    state.destroying ??= (async () => {
      state.forgetCancel?.()
      // A host that lost the run to a successor destroys nothing of it: the successor's agent runs in that sandbox, and
      // diffs against the run's file baseline.
      if (state.owner && !(await state.owner.stillOwned())) {
        await state.files?.stop({ flush: false, keepBaseline: true })
        return void state.logger?.sandbox(`withSandbox: run ${state.runId} is driven by another host now; leaving sandbox ${state.handle.id} to it (${why})`)
      }
      await state.files?.stop({ flush: false })
      // A durable run's agent may have been started by another host, and its journal may live outside the sandbox (local-process).
      if (state.durable) await endJournaledRun(state.handle, { runId: state.runId, dir: state.durable.run.journalDir }, (message) => state.logger?.sandbox(`withSandbox: ${message}`))
      state.logger?.sandbox(`destroying sandbox ${state.handle.id} (${why})`)
      takeDetachedUses(sandbox, state.key) // destroy forgets every use of the key
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
    // A takeover whose predecessor stored some of the run's diffs before it died sends only the rest.
    const stored = state.durable?.run.attach ? await storedFileChanges(state.durable.run.log).catch(() => new Set<string>()) : undefined
    for (const { path, diff, ...flags } of await state.files.changes()) {
      // The stream reaches clients and event logs: no workspace secret value, raw or encoded, travels in a diff.
      // `flags`: `tooLarge`/`size` or `notRegular` when the content was not read (see FileChange).
      const change = { path: state.scrubber.text(path), diff: state.scrubber.text(diff), ...flags }
      if (stored?.has(change.path)) continue
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
      // A durable run's baseline is kept under its run id: a host that takes the run over diffs against the run's start.
      const baselineDir = state.durable ? durableRunFiles(state.runId, journalDirOf(state.handle, state.durable.run.journalDir)).baseline : undefined
      // An attach also sends the file events of writes no host watched, those the run's log lacks.
      const log = state.durable?.run.attach ? state.durable.run.log : undefined
      return await startRunFileEvents({
        handle,
        hooks: sandbox.hooks,
        redactPath: state.scrubber.text,
        ...(sink ? { runtime: sink } : {}),
        ...(logger ? { logger } : {}),
        ...(baselineDir ? { baselineDir } : {}),
        ...(log ? { loggedFileEvents: async () => lastFileEvents(await log.snapshot()) } : {}),
      })
    } catch (error) {
      logger?.errors(`withSandbox: file events for sandbox ${handle.id} could not start; the run goes on without them`, { error })
      return undefined
    }
  }

  /** The run reached a terminal hook: it is no longer live, so a later abort must not destroy the sandbox. */
  function endRun(state: RunState): void {
    state.ended = true
    state.forgetAbort?.()
    state.forgetCancel?.()
    state.chunks.close()
  }

  /**
   * A durable run another host took over while this one was paused or cut off
   * (its claim moved `driverEpoch`): stop watching and leave everything to the
   * successor: no destroy, no record write, no release (whose `keepAlive`
   * timer could destroy the sandbox under it), the file baseline kept. True
   * when that was the case. Source: issue 28 "a paused host that wakes up".
   */
  async function leaveLostRun(state: RunState): Promise<boolean> {
    if (!state.owner || (await state.owner.stillOwned())) return false
    endRun(state)
    await state.files?.stop({ flush: false, keepBaseline: true })
    state.logger?.sandbox(`withSandbox: run ${state.runId} is driven by another host now; its sandbox, journal and record are left to that host`)
    return true
  }

  /** Run a terminal hook's work, then let the thread's next run start, whatever happened. */
  async function thenRelease(ctx: ChatMiddlewareContext, work: (state: RunState) => Promise<void>): Promise<void> {
    const state = runs.get(ctx)
    if (!state) return
    try {
      await work(state)
    } finally {
      state.releaseTurn()
      state.lease?.release() // after the record is settled, so an attach waiting for it finds the run's end
    }
  }

  /** A run whose agent finished: keep the sandbox for the thread, or destroy it when the lifecycle says so. */
  async function finishRun(ctx: ChatMiddlewareContext): Promise<void> {
    const state = runs.get(ctx)
    if (!state) return
    endRun(state)
    await state.files?.stop({ flush: true })
    if (sandbox.lifecycle.reuse === 'none' || state.destroyAfterRun) return destroyRun(state, `run finished, ${state.destroyAfterRun ? 'no threadId' : "reuse 'none'"}`)
    releaseTakenOver(state)
    const stillUsed = sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
    if (!sandbox.lifecycle.destroyOnComplete) return void state.logger?.sandbox(`keeping sandbox ${state.handle.id} for thread ${ctx.threadId}`)
    // A shared thread sandbox goes when the LAST run on it finishes, never under another run's feet.
    if (stillUsed === 0) return destroyRun(state, 'run finished, destroyOnComplete')
    state.logger?.sandbox(`keeping sandbox ${state.handle.id}: ${stillUsed} other run(s) of thread ${ctx.threadId} still use it; the last one destroys it (destroyOnComplete)`)
  }

  /**
   * An attaching run took over a run detached in this process: the detached
   * run's use of the sandbox ends with it, before the attach's own release
   * (so `destroyOnComplete` sees the true count).
   */
  function releaseTakenOver(state: RunState): void {
    if (!state.durable?.run.attach) return
    for (let n = takeDetachedUses(sandbox, state.key); n > 0; n--) sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
  }

  /**
   * The abort of a durable run with no cancel in either band: stop watching
   * (the run's file baseline stays for the takeover), keep the sandbox (its
   * agent runs on), write `detachedSince` + `sandboxKey`, and tell core's
   * delivery sink to leave the log open. The sandbox stays in
   * use (no release), so no `keepAlive` timer runs under the detached agent.
   */
  async function detachRun(ctx: ChatMiddlewareContext, state: RunState, runStore: RunStore): Promise<void> {
    await state.files?.stop({ flush: false, keepBaseline: true })
    if (!(await recordDetach(runStore, state.runId, state.key, state.logger, state.owner)) && !state.orphansFindable) {
      // No sweep could ever reach a detached run whose record lacks detachedSince unless the stores can find orphans (the
      // run store's listUndetachedRuns and the lock store's isHeld), issue 29: a lost run beats a sandbox billed for ever.
      state.logger?.errors(`withSandbox: run ${state.runId} could not be marked detached and its stores cannot find orphans (listUndetachedRuns and isHeld), so no sweep would ever reclaim it: destroying sandbox ${state.handle.id} instead`)
      return destroyRun(state, 'the detach could not be recorded')
    }
    provideRunDetached(ctx, true)
    noteRunDetached(state.runId) // a run driver's pump (sandboxRunDriver, RunController) leaves the record and the log as they are
    holdDetachedUse(sandbox, state.key)
    state.logger?.sandbox(`run ${state.runId} detached: keeping sandbox ${state.handle.id} (${state.key}) for a takeover`)
  }

  /** The record of a durable run this host started, settled at its end (see `./run-lease.ts`); nothing for an attach or a non-durable run. */
  function settleStarted(state: RunState, end: PumpEnd, cancelled: boolean): Promise<void> {
    if (!state.durable || !state.lease) return Promise.resolve()
    return settleStartedRun(state.durable.run.runs, state.runId, end, cancelled, state.lease, state.logger)
  }

  /**
   * The journal of a durable run that ended here, in a sandbox that stays (a
   * destroyed one took it along): deleted in the background once the run's
   * end is recorded (`./journal-cleanup.ts`); until then a successor needs it.
   */
  function cleanUpJournal(state: RunState): void {
    if (!state.durable || state.destroying) return
    cleanUpJournalOnceRecorded({ handle: state.handle, runId: state.runId, journalDir: state.durable.run.journalDir, runs: state.durable.run.runs, log: state.durable.run.log, ...(state.logger ? { logger: state.logger } : {}) })
  }

  /** A durable run ended here (finished, failed or cancelled): it is no longer reclaimable. */
  async function settleDurable(ctx: ChatMiddlewareContext, state: RunState): Promise<void> {
    if (!state.durable) return
    await noticed.get(ctx) // a notification's write still in flight would land after the clear
    await clearDetach(state.durable.run.runs, state.runId, state.logger, state.owner)
  }

  /** A durable, detachable run's abort: a cancel in either band (decided once), or a detach. */
  function cancelVerdict(state: RunState, runStore: RunStore, inProcess: { cancelRequested?: boolean | undefined; reason?: unknown }): Promise<boolean> {
    state.verdict ??= isCancel(runStore, state.runId, inProcess)
    return state.verdict
  }

  /**
   * A cancel seen on the run record while the run is live: the verdict is a
   * cancel, the run is aborted with `RUN_CANCEL_REASON` (core's `onAbort` then
   * reports `cancelRequested`), the adapter's loop is woken so core sees the
   * abort now rather than at the agent's next event, and the sandbox is
   * destroyed, which stops the agent wherever it is.
   */
  function cancelFromRecord(ctx: ChatMiddlewareContext, state: RunState): void {
    if (state.ended || state.destroying) return
    state.logger?.sandbox(`run ${state.runId}: a cancel is recorded on its run record; stopping the run and destroying sandbox ${state.handle.id}`)
    state.verdict = Promise.resolve(true)
    ctx.abort(RUN_CANCEL_REASON)
    state.chunks.tick()
    void destroyRun(state, 'run cancelled (requestRunCancel)').catch((error: unknown) => state.logger?.errors('sandbox destroy on a recorded cancel failed', { error }))
  }

  /** Setup once the run has its turn: ensure the sandbox, register the run, provide the capabilities, start the file events. */
  async function setupRun(ctx: ChatMiddlewareContext, { key, logger, instances, locks, ensureCtx, scrubber, releaseTurn, durable, owner, lease }: RunSetup): Promise<void> {
    const generatedThread = sandbox.lifecycle.reuse === 'thread' && GENERATED_THREAD_ID.test(ctx.threadId)
    if (generatedThread) {
      logger?.warn(`withSandbox: chat() was called without a threadId, so this run's sandbox can never be reused; it is destroyed after the run. Pass chat({ threadId }) to keep one sandbox per conversation.`)
    }
    const handle = await sandbox.ensure({ ...ensureCtx, instances, ...(locks ? { locks } : {}), ...(logger ? { logger } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}) })

    // Registered before anything else of setup: an abort during the rest of it (baseline capture, projection,
    // watcher start) finds what a detach or a destroy needs.
    const orphansFindable = durable !== undefined && isUndetachedRunLister(durable.run.runs) && locks !== undefined && isLockProbe(locks)
    const state: RunState = { key, handle, instances, logger, orphansFindable, destroyAfterRun: generatedThread, history: createToolHistory(), scrubber, chunkScrub: scrubber.stream(), releaseTurn, runId: ctx.runId, durable, owner, lease, fileDiffs: new Set(), chunks: createRunChunks() }
    runs.set(ctx, state)
    // An abort must stop the agent even while the adapter is blocked inside a
    // command, and an abort that landed while ensure() ran must not leak the
    // sandbox. Only while the run is live: the terminal hooks remove the listener.
    // A detachable run's abort destroys only for a cancel; a detach is onAbort's to record.
    const onAbort = () => {
      if (state.ended) return
      const destroy = (why: string) => void destroyRun(state, why).catch((error: unknown) => logger?.errors('sandbox destroy on abort failed', { error }))
      if (!durable?.detachable) return destroy('run aborted')
      void cancelVerdict(state, durable.run.runs, { reason: ctx.signal?.reason })
        .then((cancel) => cancel && destroy('run cancelled'))
        .catch((error: unknown) => logger?.errors('reading the cancel verdict on abort failed', { error }))
    }
    if (ctx.signal?.aborted) onAbort()
    else if (ctx.signal) {
      const signal = ctx.signal
      signal.addEventListener('abort', onAbort, { once: true })
      state.forgetAbort = () => signal.removeEventListener('abort', onAbort)
    }
    // A cancel recorded on the record by another host (requestRunCancel) reaches this run within one poll. One recorded
    // while the sandbox booted (the record exists from the start, so a Stop finds the run) stops it before the agent starts.
    if (durable) {
      if (await wasCancelRequested(durable.run.runs, ctx.runId)) cancelFromRecord(ctx, state)
      else state.forgetCancel = watchForCancel(durable.run.runs, ctx.runId, durable.cancelPollMs, () => cancelFromRecord(ctx, state))
    }
    // The reaper reclaims by this key: a run whose host dies with nobody attached is found by its lease, never by a detach.
    if (durable) await recordSandboxKey(durable.run.runs, ctx.runId, key, logger, owner)

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
    provides: [
      SandboxCapability,
      SandboxPolicyCapability,
      ProjectionCapability,
      SandboxRunChunksCapability,
      ...(durable ? [SandboxDurabilityCapability] : []),
      ...(durable?.detachable ? [DetachableRunCapability] : []),
    ],
    optionalRequires: [LocksCapability, SandboxInstanceStoreCapability, SandboxRuntimeCapability, RunDisconnectCapability, PendingTurnCapability],
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
      let owner: RunOwner | undefined
      // A prompt the agent CLI must refuse fails before any record, lease or sandbox exists (an attach sends none).
      if (!durable?.run.attach) assertPromptWithinLimit(ctx.provider, ctx.messages)
      if (durable) {
        // Refused before any record, lease or sandbox exists (the adapter would refuse them too, but only after ensure):
        // chat() made the run id up (no chat({ runId })), so nothing could find this run again; an attach with a made-up
        // thread id could never align with the stored log; an attach to a run the store does not know has nothing to follow.
        if (ctx.runId === ctx.requestId) throw new DurableRunIdRequiredError(ctx.provider)
        if (durable.run.attach && GENERATED_THREAD_ID.test(ctx.threadId)) throw new DurableThreadIdRequiredError(ctx.provider)
        // Before any lease, sandbox, journal or baseline exists under the id: one the journal would refuse fails here.
        assertValidRunId(ctx.runId, 'chat({ runId })')
        if (durable.run.attach) await assertKnownRun(durable.run.runs, ctx.runId, logger)
        // Visible from the start (spec 002): the record exists before the sandbox boots, which can take minutes, so
        // findActiveRun sees the run, a Stop finds it, and a disconnect's detachedSince lands on a record the reaper lists.
        if (!durable.run.attach) {
          const record = await durable.run.runs.createOrResume({ runId: ctx.runId, threadId: ctx.threadId, startedAt: Date.now() })
          // A finished run's id again: its record stays terminal, so nothing could see, cancel or reap this one.
          if (isTerminalRunStatus(record.status)) {
            throw new SandboxConfigError('chat.runId', `Invalid option chat.runId: run ${JSON.stringify(ctx.runId)} has ended already (its record is ${record.status}); every durable run needs a new id, e.g. crypto.randomUUID(). To follow the finished run, replay its log instead.`)
          }
        }
        owner = runOwner(durable.run.runs, ctx.runId, durable.run.attach)
        // withSandbox deletes the journal once the run's end is in the log (journal-cleanup.ts), not the harness at the CLI's exit.
        provideSandboxDurability(ctx, { ...durable.run, stillOwned: owner.stillOwned, keepJournal: true })
        if (durable.detachable) {
          provideDetachableRun(ctx, true)
          // The transport's disconnect notification (the run goes on): bookkeeping only, and prompt even mid-ensure.
          getRunDisconnect(ctx, { optional: true })?.subscribe(() => {
            if (runs.get(ctx)?.ended) return
            const write = recordDetach(durable.run.runs, ctx.runId, key, logger, owner).then(() => undefined)
            noticed.set(ctx, write)
            return write
          })
        }
        if (!warnedLocks && logger && isInMemoryLock(locks)) {
          warnedLocks = true
          logger.warn(inMemoryLockWarning(locks))
        }
      }
      // The user's turn is stored before the slow part too (spec 002), by the persistence layer that owns the rule; a store
      // that fails does not stop the run.
      await storePendingTurn(getPendingTurn(ctx, { optional: true }), logger)
      // The host starting a durable run holds its driver lease while the run is live here, from before the sandbox boots:
      // an attach elsewhere then serves the log instead of driving (or starting afresh) a run this host still drives.
      const lease = durable && !durable.run.attach ? await holdStartedRunLease(locks, ctx.runId, logger) : undefined
      logger?.sandbox(`ensure ${key} for thread ${ctx.threadId} run ${ctx.runId}`)
      let releaseTurn: (() => void) | undefined
      try {
        // One run of a sandbox at a time: a second run of the thread waits here, so its file events are its own work.
        releaseTurn = await queueThreadRun(sandbox, key, ctx.signal, () => logger?.sandbox(`run ${ctx.runId} waits for the run of thread ${ctx.threadId} in progress on ${key}`))
        // Aborted while it waited: it never started, so it must not touch (or destroy) the sandbox the other run uses.
        if (ctx.signal?.aborted) throw new WorkspaceBootstrapError('aborted', `withSandbox: run ${ctx.runId} was aborted while it waited for the run of thread ${ctx.threadId} in progress; it started nothing.`, { cause: ctx.signal.reason })
        await setupRun(ctx, { key, logger, instances, locks, ensureCtx, scrubber, releaseTurn, durable, owner, lease })
      } catch (error) {
        releaseTurn?.()
        // Registered runs settle and release after their terminal hook; a setup that failed before that does it here, or
        // the record of a run that never started would stay 'running' (its thread blocked, and no reaper lists it).
        if (!runs.get(ctx) && durable && lease) {
          const cancelled = ctx.signal?.aborted === true && (await isCancel(durable.run.runs, ctx.runId, { reason: ctx.signal.reason }))
          await settleStartedRun(durable.run.runs, ctx.runId, cancelled ? { kind: 'aborted', lastTerminal: undefined } : { kind: 'threw', error, lastTerminal: undefined }, cancelled, lease, logger)
        }
        if (!runs.get(ctx)) lease?.release()
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
      if (isTerminalChunk(chunk)) state.lastTerminal = chunk
      if (chunk.type === 'RUN_FINISHED' || chunk.type === 'RUN_ERROR') {
        const recorded = state.history.take((prefix) => ctx.createId(prefix))
        if (recorded.length > 0) ctx.messages = [...ctx.messages, ...recorded]
      }
      if (chunk.type === 'RUN_FINISHED') {
        // A tool-calling turn's RUN_FINISHED is not the end: the agent loop runs another turn, and an abort then is live.
        if (chunk.finishReason !== 'tool_calls') {
          state.agentFinished = true
          state.forgetAbort?.()
        }
        await reportFileChanges(ctx, state)
      }
      return passOn(chunk, out)
    },
    onFinish: (ctx) =>
      thenRelease(ctx, async (state) => {
        if (await leaveLostRun(state)) return
        await finishRun(ctx)
        await settleDurable(ctx, state)
        await settleStarted(state, { kind: 'ended', lastTerminal: state.lastTerminal }, false)
        cleanUpJournal(state)
      }),
    onAbort: (ctx, info: AbortInfo) =>
      thenRelease(ctx, async (state) => {
        // The agent had already finished when the abort came: keep the lifecycle of a finished run.
        if (state.agentFinished) {
          if (await leaveLostRun(state)) return
          await finishRun(ctx)
          await settleDurable(ctx, state)
          await settleStarted(state, { kind: 'ended', lastTerminal: state.lastTerminal }, false)
          return cleanUpJournal(state)
        }
        // A host that lost the run passes below too, without touching it: recordDetach, destroyRun and the settles check
        // the owner themselves (an extra record read here would delay the detach core's delivery sink waits for).
        endRun(state)
        const detachable = state.durable?.detachable ? state.durable.run.runs : undefined
        // Intent never comes from the abort itself: only a cancel in either band stops a durable run.
        if (detachable && !(info.cancelRequested === true || (await cancelVerdict(state, detachable, { reason: info.reason })))) return detachRun(ctx, state, detachable)
        await destroyRun(state, detachable ? 'run cancelled' : 'run aborted')
        await settleDurable(ctx, state)
        // Only a cancel settles the record: an abort of a non-detachable run is not a verdict on the run.
        if (detachable || (state.durable && (await cancelVerdict(state, state.durable.run.runs, { reason: info.reason })))) await settleStarted(state, { kind: 'aborted', lastTerminal: state.lastTerminal }, true)
      }),
    onError: (ctx, info) =>
      thenRelease(ctx, async (state) => {
        if (await leaveLostRun(state)) return
        endRun(state)
        await state.files?.stop({ flush: true })
        if (sandbox.lifecycle.reuse === 'none' || state.destroyAfterRun) await destroyRun(state, "run failed, reuse 'none'")
        else {
          releaseTakenOver(state)
          sandbox.release({ key: state.key, instances: state.instances, ...(state.logger ? { logger: state.logger } : {}) })
        }
        await settleDurable(ctx, state)
        await settleStarted(state, { kind: 'threw', error: info.error, lastTerminal: state.lastTerminal }, false)
        cleanUpJournal(state)
      }),
  })


}

/** How long withSandbox waits for persistence to store the user's turn before the sandbox boots, in ms: past it the run goes on. */
const PENDING_TURN_WAIT_MS = 5000

/**
 * Ask persistence to store the user's turn now (core's `PendingTurnCapability`,
 * spec 002). Never fails the run: a snapshot that throws, rejects, returns
 * something else or takes longer than {@link PENDING_TURN_WAIT_MS} is logged
 * and the run goes on (persistence stores the turn when the run starts).
 */
async function storePendingTurn(pending: { snapshot: () => Promise<void> } | undefined, logger: InternalLogger | undefined): Promise<void> {
  if (!pending) return
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), PENDING_TURN_WAIT_MS)))
  try {
    const outcome = await Promise.race([Promise.resolve().then(() => pending.snapshot()), late])
    if (outcome === 'late') logger?.warn(`withSandbox: storing the user's turn before the sandbox boots took longer than ${PENDING_TURN_WAIT_MS} ms; the run goes on without waiting`)
  } catch (error) {
    logger?.warn(`withSandbox: storing the user's turn before the sandbox boots failed (${error instanceof Error ? error.message : String(error)}); the run goes on and persistence stores it when the run starts`)
  } finally {
    clearTimeout(timer)
  }
}

/** The paths of the `file.changed` events a run's stored log holds. */
async function storedFileChanges(log: { snapshot: () => Promise<ReadonlyArray<{ chunk: StreamChunk }>> }): Promise<Set<string>> {
  const paths = new Set<string>()
  for (const { chunk } of await log.snapshot()) {
    const path = chunk.type === 'CUSTOM' && chunk.name === FILE_CHANGED_EVENT ? (chunk.value as { path?: unknown } | undefined)?.path : undefined
    if (typeof path === 'string') paths.add(path)
  }
  return paths
}

/** The last `sandbox.file` event type per path in a run's stored log. */
function lastFileEvents(entries: ReadonlyArray<{ chunk: StreamChunk }>): Map<string, SandboxFileEvent['type']> {
  const last = new Map<string, SandboxFileEvent['type']>()
  for (const { chunk } of entries) {
    if (chunk.type !== 'CUSTOM' || chunk.name !== SANDBOX_FILE_EVENT) continue
    const value = chunk.value as Partial<SandboxFileEvent> | undefined
    if (typeof value?.path === 'string' && (value.type === 'create' || value.type === 'change' || value.type === 'delete')) last.set(value.path, value.type)
  }
  return last
}

/**
 * Uses of a sandbox key held by runs that detached in this process, per
 * definition: a detached agent still uses its sandbox, so its use is not
 * released (no `keepAlive` timer runs under it) until an attaching run of the
 * key ends here, or the sandbox is destroyed.
 */
const detachedUses = new WeakMap<SandboxDefinition, Map<string, number>>()

function holdDetachedUse(sandbox: SandboxDefinition, key: string): void {
  let uses = detachedUses.get(sandbox)
  if (!uses) detachedUses.set(sandbox, (uses = new Map()))
  uses.set(key, (uses.get(key) ?? 0) + 1)
}

/** The detached uses of `key`, forgotten. */
function takeDetachedUses(sandbox: SandboxDefinition, key: string): number {
  const uses = detachedUses.get(sandbox)
  const n = uses?.get(key) ?? 0
  uses?.delete(key)
  return n
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
 * An attach to a run the store has no record of fails before ensure, so a
 * mistyped or foreign run id never boots a sandbox (the harness's preflight
 * would refuse it only after). A store that cannot answer leaves the decision
 * to that preflight.
 * @throws JournalAttachUnavailableError `unknown-run`.
 */
async function assertKnownRun(runs: RunStore, runId: string, logger: InternalLogger | undefined): Promise<void> {
  let record: Awaited<ReturnType<RunStore['get']>> | undefined
  try {
    record = await runs.get(runId)
  } catch (error) {
    logger?.errors(`withSandbox: reading the run record of ${JSON.stringify(runId)} before an attach failed; the harness's attach preflight decides`, { runId, error })
    return
  }
  if (record === null) {
    throw new JournalAttachUnavailableError(
      runId,
      'unknown-run',
      'the run store has no such run, so there is nothing to follow; no sandbox was started. The runId is mistyped, from another deployment, or its record was evicted.',
    )
  }
}

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
