/**
 * `RunController`: `pipeToRunLog` over fixed dependencies, for a host that
 * drives several runs. It resolves each run's log from its id (a per-run
 * factory) and keeps the in-flight runs so `drain()` can await them. It must
 * not share a log between runs: one run's `close()` never ends another's, and
 * one run id is piped at most once at a time. Source: spec 000 "Edge /
 * serverless execution".
 */
import type { RunRecord, RunStore, StreamChunk, StreamDurability } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'
import { loggerSchema, parseOptions } from '../contracts/validate.js'
import { driveRunLog, runIdSchema, runStoreSchema, signalSchema, streamSchema, threadIdSchema } from './run-log.js'

/**
 * What a {@link RunController} drives with. Generic in the offset type so a
 * branded-cursor backend's `StreamDurability<TOffset>` fits.
 */
export interface RunDeps<TOffset extends string = string> {
  /** The run record store. */
  runs: RunStore
  /**
   * A per-run FACTORY, `(runId) => StreamDurability`, not an instance: a log
   * is bound to one run. It must return the same log for the same `runId`
   * within a process (`memoryStream({ runId })` and `memoryStream(request)`
   * do), or `attach` and a takeover's `snapshot()` miss this host's appends.
   */
  durability: (runId: string) => StreamDurability<TOffset>
  /** Receives every store, log and stream failure (`errors`). */
  logger?: InternalLogger
}

/** Input of {@link RunController.start}. */
export interface RunControllerStartInput {
  /** The run's id, unique per run. */
  runId: string
  /** The run's thread (`RunRecord.threadId`). Required. */
  threadId: string
  /** The run's chunks, usually `chat()`'s stream. */
  stream: AsyncIterable<StreamChunk>
  /** Stops the run; see `PipeToRunLogOptions.signal` for cancel versus disconnect. */
  signal?: AbortSignal
}

/** A started run. */
export interface RunHandle {
  readonly runId: string
  /** Resolves with the record once the run is settled and its log closed (`null` when the store has none). Never rejects. */
  readonly done: Promise<RunRecord | null>
}

const depsSchema = z
  .object({
    runs: runStoreSchema,
    durability: z.custom<(runId: string) => StreamDurability>((v) => typeof v === 'function', { message: 'expected a per-run factory (runId) => StreamDurability, e.g. (runId) => memoryStream({ runId })' }),
    logger: loggerSchema,
  })
  .strict()

const startSchema = z.object({ runId: runIdSchema, threadId: threadIdSchema, stream: streamSchema, signal: signalSchema }).strict()
const offsetSchema = z.string('expected the offset as a string the log produced; "-1" reads from the start for memoryStream')

/**
 * Drives runs into their logs and records with `pipeToRunLog`, and serves
 * each run's log. Safe for concurrent runs: each appends to the log
 * `durability(runId)` returns.
 *
 * @example
 * ```ts
 * const controller = new RunController({ runs: new InMemoryRunStore(), durability: (runId) => memoryStream({ runId }) })
 * const handle = controller.start({ runId, threadId, stream: chat({ adapter, messages, threadId, runId }) })
 * for await (const { offset, chunk } of controller.attach(runId, '-1')) console.log(offset, chunk.type)
 * await handle.done
 * await controller.drain()
 * ```
 */
export class RunController<TOffset extends string = string> {
  private readonly deps: RunDeps<TOffset>
  private readonly inFlight = new Map<string, Promise<RunRecord | null>>()

  /**
   * @param deps - {@link RunDeps}.
   * @throws SandboxConfigError `invalid-option` when a dependency is missing or of the wrong type.
   */
  constructor(deps: RunDeps<TOffset>) {
    parseOptions(depsSchema, deps, 'RunController')
    this.deps = deps
  }

  /**
   * Start piping `stream` into the run's log and record; returns at once.
   *
   * @param input - {@link RunControllerStartInput}.
   * @returns The run's handle; `done` never rejects.
   * @throws SandboxConfigError `invalid-option` for a bad input, or when `runId` is already being piped by this controller (await its `done` first).
   */
  start(input: RunControllerStartInput): RunHandle {
    parseOptions(startSchema, input, 'RunController.start')
    const { runId, threadId, stream, signal } = input
    if (this.inFlight.has(runId)) {
      throw new SandboxConfigError('RunController.start.runId', `Invalid option RunController.start.runId: run ${JSON.stringify(runId)} is already being piped by this controller; two pipes would interleave chunks in one log. Await its handle.done first, or use a new runId.`)
    }
    const { runs, logger } = this.deps
    const done = driveRunLog(stream, { runs, runId, threadId, signal, logger }, () => this.deps.durability(runId)).finally(() => this.inFlight.delete(runId))
    this.inFlight.set(runId, done)
    return { runId, done }
  }

  /**
   * The run's stored chunks after `fromOffset`, then each new one until the
   * log is closed or `signal` aborts: `durability(runId).read(fromOffset, signal)`.
   * Unlike `start`, failures of the log (an unknown run, a backend error) reach
   * the caller, from the iteration.
   *
   * @param runId - The run to read; first, because the log is per-run.
   * @param fromOffset - An offset the log produced (exclusive), or the log's from-start cursor (`'-1'` for `memoryStream`).
   * @param signal - Stops tailing.
   * @throws SandboxConfigError `invalid-option` (when called) for a bad argument.
   */
  attach(runId: string, fromOffset: TOffset, signal?: AbortSignal): AsyncIterable<{ offset: TOffset; chunk: StreamChunk }> {
    parseOptions(runIdSchema, runId, 'RunController.attach.runId')
    parseOptions(offsetSchema, fromOffset, 'RunController.attach.fromOffset')
    parseOptions(signalSchema, signal, 'RunController.attach.signal')
    const { durability } = this.deps
    return {
      [Symbol.asyncIterator]: () => durability(runId).read(fromOffset, signal)[Symbol.asyncIterator](),
    }
  }

  /**
   * Resolves once every run started on this controller has settled,
   * including runs started while draining. For `waitUntil(controller.drain())`.
   * Never rejects.
   */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all(this.inFlight.values())
  }
}
