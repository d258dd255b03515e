/**
 * The setup of a run, top to bottom: refuse what must fail before anything
 * exists, create a durable run's record and take its lease, store the user's
 * turn, wait for the turn of the sandbox key, ensure the sandbox, register the
 * run (so an abort during the rest of setup finds what it needs), watch for a
 * cancel, provide the capabilities, start the file events.
 */
import { isTerminalRunStatus, provideDetachableRun, type RunRecord, wasCancelRequested, type ChatMiddlewareContext, type RunStore } from '@tanstack/ai'
import { getPendingTurn, getRunDisconnect, getSandboxRuntime, type InternalLogger } from '@tanstack/ai/adapter-internals'
import { getLocks } from '@tanstack/ai/locks'
import { getSandboxInstanceStore, getSandboxTranscript, provideProjection, provideSandbox, provideSandboxDurability, provideSandboxPolicy, provideSandboxRunChunks } from '../capabilities/tokens.js'
import { SandboxConfigError } from '../contracts/errors.js'
import { assertValidRunId } from '../contracts/run-id.js'
import { DurableRunIdRequiredError, DurableThreadIdRequiredError } from '../harness/durable-ids.js'
import { assertPromptWithinLimit } from '../harness/prompt-limit.js'
import { JournalAttachUnavailableError } from '../journal/attach-preflight.js'
import { isLockProbe, isUndetachedRunLister } from '../reaper/orphans.js'
import { createSecretScrubber } from '../secrets/secret-scrubber.js'
import { namedSecretValues } from '../secrets/secret-values.js'
import { resolveSecretEnv } from '../workspace/define-workspace.js'
import { WorkspaceBootstrapError } from '../workspace/errors.js'
import { PROJECTION_MARKER, projectWorkspace } from '../workspace/projection.js'
import { inMemoryLockWarning, isCancel, isInMemoryLock, recordDetach, recordSandboxKey, runOwner, watchForCancel, type RunOwner } from './durability.js'
import { redactingLogger, scrubLoggerSink } from './redacting-logger.js'
import { cancelFromRecord, cancelVerdict } from './run-abort.js'
import { createRunChunks } from './run-chunks.js'
import { startFileEvents } from './run-file-changes.js'
import { holdStartedRunLease, settleStartedRun } from './run-lease.js'
import { holdRunSnapshots, restoreLatest, type RunSnapshots } from './run-snapshots.js'
import { destroyRun, type RunSetup, type RunState, type WithSandboxScope } from './run-state.js'
import { queueThreadRun } from './thread-runs.js'
import { createToolHistory } from './tool-history.js'
import { runFilesOf, type DurableRunFiles } from '../journal/run-files.js'
import type { SandboxHandle } from '../contracts/handle.js'

/**
 * The setup hook: resolve the stores and the key, refuse what must fail
 * before anything exists (a prompt too long for the CLI; for a durable run a
 * made-up run or thread id, an unknown run to attach to, a bad or finished
 * run id), create a durable run's record and take its lease, store the user's
 * turn, wait for the turn of the sandbox key, then {@link setupRun}. A setup
 * that fails settles and releases what it took.
 */
export async function setUpRun(scope: WithSandboxScope, ctx: ChatMiddlewareContext): Promise<void> {
  const { sandbox, parsed, durable, runs, noticed } = scope
  // Everything this run logs has the workspace's secrets removed, raw and encoded (a secret can sit in a file
  // name, an error, a tool result): what this package logs, and what core logs itself (its sink is wrapped).
  const scrubber = createSecretScrubber(namedSecretValues(Object.values(sandbox.workspace.secrets)))
  const coreLogger = getSandboxRuntime(ctx, { optional: true })?.logger
  if (!scrubber.empty) scrubLoggerSink(coreLogger, scrubber.fragments)
  const logger = redactingLogger(coreLogger, scrubber.fragments)
  // What withPersistence stores of this run passes the same scrubber as its chunks.
  if (!scrubber.empty) getSandboxTranscript(ctx, { optional: true })?.redactWith(scrubber.text)
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
    if (!scope.warnedLocks && logger && isInMemoryLock(locks)) {
      scope.warnedLocks = true
      logger.warn(inMemoryLockWarning(locks))
    }
  }
  // The user's turn is stored before the slow part too (spec 002), by the persistence layer that owns the rule; a store
  // that fails does not stop the run.
  await storePendingTurn(getPendingTurn(ctx, { optional: true }), logger)
  // The host starting a durable run holds its driver lease while the run is live here, from before the sandbox boots:
  // an attach elsewhere then serves the log instead of driving (or starting afresh) a run this host still drives.
  const lease = durable && !durable.run.attach ? await holdStartedRunLease(locks, ctx.runId, logger) : undefined
  // The lease may have been held by another start of this very run id, which has since ended: starting the agent again
  // would run the work twice under one id, writing to a log that is closed. Read the record again now that it is ours.
  if (durable && lease) await refuseEndedMeanwhile(durable.run.runs, ctx.runId, lease, logger)
  logger?.sandbox(`ensure ${key} for thread ${ctx.threadId} run ${ctx.runId}`)
  let releaseTurn: (() => void) | undefined
  let snapshots: RunSnapshots | undefined
  try {
    // One run of a sandbox at a time: a second run of the thread waits here, so its file events are its own work.
    releaseTurn = await queueThreadRun(sandbox, key, ctx.signal, () => logger?.sandbox(`run ${ctx.runId} waits for the run of thread ${ctx.threadId} in progress on ${key}`))
    // Aborted while it waited: it never started, so it must not touch (or destroy) the sandbox the other run uses.
    if (ctx.signal?.aborted) throw new WorkspaceBootstrapError('aborted', `withSandbox: run ${ctx.runId} was aborted while it waited for the run of thread ${ctx.threadId} in progress; it started nothing.`, { cause: ctx.signal.reason })
    // The thread's writer lease once this run has the thread's turn, before the sandbox: the restore and the
    // checkpoint of this run are the thread's only writes.
    if (parsed.snapshots && !GENERATED_THREAD_ID.test(ctx.threadId)) snapshots = await holdRunSnapshots(parsed.snapshots, ctx, logger)
    await setupRun(scope, ctx, { key, logger, instances, locks, ensureCtx, scrubber, releaseTurn, durable, owner, lease, snapshots })
  } catch (error) {
    releaseTurn?.()
    if (!runs.get(ctx)) await snapshots?.release()
    // Registered runs settle and release after their terminal hook; a setup that failed before that does it here, or
    // the record of a run that never started would stay 'running' (its thread blocked, and no reaper lists it).
    if (!runs.get(ctx) && durable && lease) {
      const cancelled = ctx.signal?.aborted === true && (await isCancel(durable.run.runs, ctx.runId, { reason: ctx.signal.reason }))
      await settleStartedRun(durable.run.runs, ctx.runId, cancelled ? { kind: 'aborted', lastTerminal: undefined } : { kind: 'threw', error, lastTerminal: undefined }, cancelled, lease, logger)
    }
    if (!runs.get(ctx)) lease?.release()
    throw error
  }
}

/** Setup once the run has its turn: ensure the sandbox, register the run, provide the capabilities, start the file events. */
async function setupRun(scope: WithSandboxScope, ctx: ChatMiddlewareContext, { key, logger, instances, locks, ensureCtx, scrubber, releaseTurn, durable, owner, lease, snapshots }: RunSetup): Promise<void> {
  const { sandbox, runs } = scope
  const generatedThread = sandbox.lifecycle.reuse === 'thread' && GENERATED_THREAD_ID.test(ctx.threadId)
  if (generatedThread) {
    logger?.warn(`withSandbox: chat() was called without a threadId, so this run's sandbox can never be reused; it is destroyed after the run. Pass chat({ threadId }) to keep one sandbox per conversation.`)
  }
  const handle = await sandbox.ensure({ ...ensureCtx, instances, ...(locks ? { locks } : {}), ...(logger ? { logger } : {}), ...(ctx.signal ? { signal: ctx.signal } : {}), ...(snapshots ? { restore: restoreLatest(snapshots, logger) } : {}) })

  // Registered before anything else of setup: an abort during the rest of it (baseline capture, projection,
  // watcher start) finds what a detach or a destroy needs.
  const orphansFindable = durable !== undefined && isUndetachedRunLister(durable.run.runs) && locks !== undefined && isLockProbe(locks)
  const state: RunState = { key, handle, instances, logger, orphansFindable, destroyAfterRun: generatedThread, history: createToolHistory(), scrubber, chunkScrub: scrubber.stream(), releaseTurn, runId: ctx.runId, durable, journalFiles: durable ? journalFilesOf(handle, ctx.runId, durable.run.journalDir, logger) : undefined, owner, lease, snapshots, fileDiffs: new Set(), chunks: createRunChunks() }
  runs.set(ctx, state)
  // An abort must stop the agent even while the adapter is blocked inside a
  // command, and an abort that landed while ensure() ran must not leak the
  // sandbox. Only while the run is live: the terminal hooks remove the listener.
  // A detachable run's abort destroys only for a cancel; a detach is onAbort's to record.
  const onAbort = () => {
    if (state.ended) return
    const destroy = (why: string) => void destroyRun(sandbox, state, why).catch((error: unknown) => logger?.errors('sandbox destroy on abort failed', { error }))
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
    if (await wasCancelRequested(durable.run.runs, ctx.runId)) cancelFromRecord(sandbox, ctx, state)
    else state.forgetCancel = watchForCancel(durable.run.runs, ctx.runId, durable.cancelPollMs, () => cancelFromRecord(sandbox, ctx, state))
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
    state.files = await startFileEvents(sandbox, ctx, state)
    if (state.destroying) await state.files?.stop({ flush: false }) // aborted while it started
  }
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

/**
 * A start whose lease came free only because another start of the same run id
 * ended meanwhile is refused, its lease released.
 * @throws SandboxConfigError `chat.runId`.
 */
async function refuseEndedMeanwhile(runs: RunStore, runId: string, lease: { release: () => void }, logger: InternalLogger | undefined): Promise<void> {
  let status: string | undefined
  try {
    status = (await runs.get(runId))?.status
  } catch (error) {
    logger?.errors(`withSandbox: reading the record of run ${JSON.stringify(runId)} after taking its lease failed; the run goes on`, { runId, error })
    return
  }
  if (status === undefined || !isTerminalRunStatus(status as RunRecord['status'])) return
  lease.release()
  throw new SandboxConfigError(
    'chat.runId',
    `Invalid option chat.runId: run ${JSON.stringify(runId)} was started by another request, which ended while this one waited for its lease (the record is ${status}); nothing was started again. Every durable run needs a new id, e.g. crypto.randomUUID(); to follow a run, attach to it (durability.attach: true) or replay its log.`,
  )
}

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

/**
 * A durable run's journal names, derived once. A handle whose own
 * `journalDir` is unusable (a relative folder) gets none: that is logged, the
 * run goes on (its harness then ends it with a RUN_ERROR naming the folder),
 * and its end falls back to the run id, which logs the same refusal instead
 * of throwing between `ensure` and the run's registration.
 */
function journalFilesOf(handle: SandboxHandle, runId: string, dir: string | undefined, logger: InternalLogger | undefined): DurableRunFiles | undefined {
  try {
    return runFilesOf(handle, { runId, dir })
  } catch (error) {
    logger?.errors(`withSandbox: the journal of run ${runId} has no usable folder in sandbox ${handle.id}`, { error })
    return undefined
  }
}
