/**
 * `sandboxRunDriver`: fills core's `RunDriverOptions` (`claim` = `withRunClaim`,
 * `pipe` = `pipeToRunLog` through the fenced log and record). It never decides
 * detach or cancel. Invariant: a `pipe` outside its `claim` drives nothing.
 * Source: spec 000 "`sandboxRunDriver` — the supported way to drive a resumed run".
 * Design notes: docs/design/durability.md
 */
import type { RunDriverOptions, StreamChunk, StreamDurability } from '@tanstack/ai'
import type { LockStore } from '@tanstack/ai/locks'
import { z } from 'zod'
import { SandboxError } from '../contracts/errors.js'
import { assertValidRunId } from '../contracts/run-id.js'
import { MAX_TIMER_MS } from '../definition/long-timeout.js'
import { loggerSchema, parseOptions } from '../contracts/validate.js'
import { awaitLogQuiescence, DEFAULT_FENCE_QUIET_MS, fenceDurability, fenceRunStore, RunClaimLostError, withRunClaim, type RunClaim } from './claim.js'
import { driveRunLog, runStoreSchema } from './run-log.js'
import { storedRunEnd } from './run-outcome.js'
import { reporter } from './run-report.js'

/** Options of {@link sandboxRunDriver}: core's `RunDriverOptions` without `claim` / `pipe` (which it fills), plus the log factory and the quiescence window. */
export interface SandboxRunDriverOptions<TOffset extends string = string> extends Omit<RunDriverOptions, 'claim' | 'pipe'> {
  /**
   * A per-run FACTORY, `(runId) => StreamDurability`, the same shape as
   * `RunDeps.durability`. It must resolve the SAME log the response serves
   * (`memoryStream(request)` / `memoryStream({ runId })` do within a process).
   */
  durability: (runId: string) => StreamDurability<TOffset>
  /** Quiescence window in ms: the stored log must stop growing this long before the first append. Default {@link DEFAULT_FENCE_QUIET_MS} (5000). Keep it above the lease renewal interval. */
  fenceQuietMs?: number
}

/**
 * `pipe` was called with no claim held for its run, so there is no epoch to
 * fence with and nothing was driven. A programming error: the options object
 * `sandboxRunDriver` returned was taken apart and `pipe` called on its own.
 *
 * @example
 * ```ts
 * if (error instanceof RunDriverPipeOutsideClaimError) console.error(`run ${error.runId}: pipe ran outside its claim`)
 * ```
 */
export class RunDriverPipeOutsideClaimError extends SandboxError<'pipe-outside-claim'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/RunDriverPipeOutsideClaimError'
  /** The run `pipe` was called for. */
  readonly runId: string

  /** @param runId - The run `pipe` was called for. */
  constructor(runId: string) {
    super('pipe-outside-claim', `sandboxRunDriver: pipe was called for run ${JSON.stringify(runId)} outside its claim, so there is no epoch to fence its writes with; nothing was driven. Pass the whole driver object to resumeServerSentEventsResponse({ adapter, driver }) and let core call claim, then pipe.`)
    this.runId = runId
  }
}

const isFunction = (v: unknown): boolean => typeof v === 'function'

const optionsSchema = z
  .object({
    request: z.instanceof(Request, { message: 'expected the attach Request (its X-Run-Id header or ?runId names the run)' }),
    runs: runStoreSchema,
    locks: z.custom<LockStore>((v) => typeof v === 'object' && v !== null && isFunction((v as { withLock?: unknown }).withLock), {
      message: "expected a LockStore (withLock(key, fn)); use a distributed one in production, InMemoryLockStore from '@tanstack/ai/locks' only within one process",
    }),
    durability: z.custom<(runId: string) => StreamDurability>(isFunction, { message: 'expected a per-run factory (runId) => StreamDurability, e.g. () => memoryStream(request)' }),
    drive: z.custom<RunDriverOptions['drive']>(isFunction, { message: 'expected drive({ runId, threadId, signal }) returning the chat() stream' }),
    waitUntil: z.custom<(promise: Promise<unknown>) => void>(isFunction, { message: 'expected waitUntil(promise), e.g. (p) => ctx.waitUntil(p)' }).optional(),
    fenceQuietMs: z.number('expected fenceQuietMs in ms as a number').int('expected a whole number of ms').min(0, 'expected 0 ms or more').max(MAX_TIMER_MS, `expected at most ${MAX_TIMER_MS} ms (a Node timer's limit)`).optional(),
    logger: loggerSchema,
  })
  .strict()

/**
 * The supported way to drive a resumed run: pass the result as `driver` to
 * core's `resumeServerSentEventsResponse({ adapter, driver })` in the attach
 * route. The response still serves the log; beside it this host claims the
 * run and drives it:
 *
 * 1. **Lease**: `locks.withLock` around the whole drive; the lock's signal
 *    aborts the drive (`drive`'s `signal`).
 * 2. **Epoch**: each successful claim bumps `RunRecord.driverEpoch`; it is
 *    re-read before every append. A superseded driver's append is refused and
 *    the refusal latches; its terminal-status `runs.update` is suppressed
 *    (non-terminal patches and `close()` pass).
 * 3. **Quiescence**: the stored log must stop growing for `fenceQuietMs`
 *    before the drive is started, so its first append follows the
 *    predecessor's last.
 *
 * While another driver holds the run, the claim waits for its lease: it
 * then finds the run finished (`'terminal'`) or, when that driver died with
 * the run still running, takes it over.
 *
 * Total: no run id, no record (`RunClaimNotAcquiredError` `'unknown'`), a
 * terminal record (`'terminal'`), a lease lost before the claim landed
 * (`'superseded'`), a lost lease (`RunClaimLostError`) or a throwing `drive`
 * (a terminal `RUN_ERROR` and a `'failed'` record) all end as "serve the log,
 * drive nothing more", logged server-side (`logger`). `drive` gets the run
 * record's `threadId`; pass it to `chat()` with `withSandbox(sandbox, { runs,
 * durability: { adapter, attach: true } })`.
 *
 * @param options - {@link SandboxRunDriverOptions}.
 * @returns Core's `RunDriverOptions` with `claim` and `pipe` filled in.
 * @throws SandboxConfigError `invalid-option` naming the field, for a missing or mistyped option.
 * @example
 * ```ts
 * return resumeServerSentEventsResponse({
 *   adapter: memoryStream(request),
 *   driver: sandboxRunDriver({ request, runs, locks, durability: () => memoryStream(request), drive }),
 * })
 * ```
 */
export function sandboxRunDriver<TOffset extends string = string>(options: SandboxRunDriverOptions<TOffset>): RunDriverOptions {
  parseOptions(optionsSchema, options, 'sandboxRunDriver')
  const { request, runs, locks, durability, drive, waitUntil, logger } = options
  const quietMs = options.fenceQuietMs ?? DEFAULT_FENCE_QUIET_MS
  /** The claims this driver holds, by run id: how `pipe` finds its epoch. */
  const held = new Map<string, RunClaim>()

  const claim: RunDriverOptions['claim'] = async (input, fn) => {
    // A record another process wrote may carry an id the run-id rule refuses: claim nothing, touch nothing.
    assertValidRunId(input.runId, 'the claimed run id')
    return withRunClaim({ runs: input.runs, locks: input.locks, runId: input.runId, report: reporter(logger, input.runId) }, async (runClaim) => {
      held.set(input.runId, runClaim)
      try {
        return await fn({ runId: runClaim.runId, epoch: runClaim.epoch, signal: runClaim.signal })
      } finally {
        held.delete(input.runId)
      }
    })
  }

  const pipe: RunDriverOptions['pipe'] = async (stream, input) => {
    const runClaim = held.get(input.runId)
    if (!runClaim) {
      await release(stream)
      throw new RunDriverPipeOutsideClaimError(input.runId)
    }
    const report = reporter(logger, input.runId)
    const log = durability(input.runId)
    let quiet: boolean
    try {
      quiet = await awaitLogQuiescence(log, quietMs, runClaim.signal)
    } catch (error) {
      report.error('reading the stored log for quiescence failed; not driving the run', error)
      await release(stream)
      throw error
    }
    if (!quiet) {
      // Lost during the wait: nothing was written, and the log is left open for the driver that holds the run now.
      await release(stream)
      throw runClaim.signal.reason instanceof RunClaimLostError ? runClaim.signal.reason : new RunClaimLostError(input.runId, runClaim.epoch, 'lost while waiting for the log to go quiet')
    }
    // A predecessor that delivered the run's end and died before it settled the record: the end counts, and the drive
    // (which replays nothing new) only lets the sandbox lifecycle and the journal cleanup run.
    const stored = await log.snapshot().catch(() => [])
    const storedEnd = storedRunEnd(stored.map((entry) => entry.chunk))
    if (storedEnd) report.warn(`the log already holds the run's end (${storedEnd.type}) but the record is not terminal: its last driver died before it settled the record; settling it from the log`)
    const fenced = fenceDurability(log, runClaim)
    return driveRunLog(stream, { runs: fenceRunStore(runs, runClaim, report), runId: input.runId, threadId: input.threadId, signal: runClaim.signal, logger, storedEnd }, () => fenced)
  }

  return {
    request,
    runs,
    locks,
    drive: (input) => guardedDrive(drive, input, logger),
    claim,
    pipe,
    ...(waitUntil ? { waitUntil } : {}),
    ...(logger ? { logger } : {}),
  }
}

/**
 * `drive(input)`, with every failure reported: a synchronous throw or a
 * non-iterable result becomes a stream that throws it, and an iteration that
 * throws is reported as it passes through, so `pipeToRunLog` records the
 * failure (a terminal `RUN_ERROR`, a `'failed'` record) and the log says why.
 */
function guardedDrive(drive: RunDriverOptions['drive'], input: Parameters<RunDriverOptions['drive']>[0], logger: SandboxRunDriverOptions['logger']): AsyncIterable<StreamChunk> {
  const report = reporter(logger, input.runId)
  let stream: unknown
  try {
    stream = drive(input)
  } catch (error) {
    report.error('drive() threw; the run fails with its error', error)
    return failing(error)
  }
  if (typeof stream !== 'object' || stream === null || typeof (stream as Record<symbol, unknown>)[Symbol.asyncIterator] !== 'function') {
    const error = new TypeError('sandboxRunDriver: drive({ runId, threadId, signal }) must return an AsyncIterable<StreamChunk>, e.g. the stream chat() returns')
    report.error('drive() returned no stream', error)
    return failing(error)
  }
  const source = stream as AsyncIterable<StreamChunk>
  return {
    [Symbol.asyncIterator]: () => {
      const iterator = source[Symbol.asyncIterator]()
      return {
        next: () =>
          iterator.next().catch((error: unknown) => {
            if (!input.signal.aborted) report.error('the driven stream threw; the run fails with its error', error)
            throw error
          }),
        return: (value?: unknown) => iterator.return?.(value) ?? Promise.resolve({ done: true as const, value: undefined }),
      }
    },
  }
}

// eslint-disable-next-line require-yield -- a stream whose only event is the drive's failure
async function* failing(error: unknown): AsyncGenerator<StreamChunk> {
  throw error
}

/** Close a stream that will not be read (an unstarted `chat()` runs nothing). */
async function release(stream: AsyncIterable<StreamChunk>): Promise<void> {
  try {
    await stream[Symbol.asyncIterator]().return?.()
  } catch {
    // An unstarted stream has nothing to release; a failure here changes nothing about the drive.
  }
}
