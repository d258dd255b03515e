/**
 * `runHarness`: the one run loop every harness adapter shares, and its durable
 * entry. A plain run is one turn (`harness-turn.ts`) inside `guardHarnessRun`;
 * a durable run is journaled and aligned with the stored log. An adapter
 * supplies only its translator, session-id rule and `prepare`.
 * Source: docs/harnesses.md "Run lifecycle", docs/journal.md.
 * Design notes: docs/design/harness-adapters.md
 */
import { randomUUID } from 'node:crypto'
import type { AdapterYieldChunk, StreamChunk, TextOptions } from '@tanstack/ai'
import { EventType } from '@tanstack/ai'
import type { SandboxHandle } from '../contracts/handle.js'
import { mergeChunkStreams } from '../bridge/bridge-events.js'
import { getSandbox, getSandboxDurability, getSandboxRunChunks } from '../capabilities/tokens.js'
import { alignedIfAttaching, journalOptionsFor, type SandboxRunDurability } from '../durability/capability.js'
import { storedRunEnd } from '../durability/run-outcome.js'
import { awaitAttachableJournal, JournalAttachUnavailableError } from '../journal/attach-preflight.js'
import { journalExistsCommand } from '../journal/commands.js'
import { finishJournal } from '../journal/run-end.js'
import { runFilesOf, type DurableRunFiles } from '../journal/run-files.js'
import { DurableAttachNotSupportedError, resolveDurableRunId, resolveDurableThreadId } from './durable-ids.js'
import { guardHarnessRun } from './guard-harness-run.js'
import type { RunHarnessOptions } from './harness-launch.js'
import { harnessTurn } from './harness-turn.js'

/**
 * Run one harness turn as `chatStream`'s stream (inside `guardHarnessRun`).
 *
 * Lifecycle (docs/harnesses.md): the stream ends at the terminal chunk of the
 * CLI's final event. That chunk is held until the CLI's stdout ends, or for
 * {@link FINAL_EVENT_HOLD_MS} (at most `exitGraceMs`) with no further event;
 * an event during the hold means it was not the CLI's last word: a fresh
 * translator reads on, a later final event replaces it, and a
 * {@link HARNESS_INTEGRITY_EVENT} says so (also for a usage that went down, or
 * a second result of one tool call). Once the run ended nothing more the CLI
 * prints is accepted; it then has `exitGraceMs` to exit before its
 * process tree gets TERM, then KILL.
 * A CLI that exits without one ends the run through `translator.finish`; an
 * exit 0 with no event at all is a `RUN_ERROR` `no_output` carrying the stderr
 * tail. A timeout ends it with `RUN_ERROR` `timeout`; an aborted request ends
 * it with no further chunk. Tool calls still open get an interrupted
 * `TOOL_CALL_RESULT` before the terminal chunk. Whatever the CLI left running
 * in the background is stopped when the run ends.
 *
 * @param input - See {@link RunHarnessOptions}.
 * @returns The run's chunks; never throws what the run throws (see `guardHarnessRun`).
 * @example
 * ```ts
 * chatStream: (options) => runHarness({ harness: 'codex', model, options, translator: (ids) => createCodexTranslator({ ...ids, model }), prepare: async (run) => ({ command, cwd, env }) })
 * ```
 */
export function runHarness(input: RunHarnessOptions): AsyncGenerator<AdapterYieldChunk, void, undefined> {
  const { options } = input
  const durability = getSandboxDurability(options.capabilities!, { optional: true })
  if (!durability) return guardHarnessRun({ ...input, options, run: (run) => harnessTurn(input, run, undefined) })
  return durableHarnessRun(input, durability)
}

/**
 * A durable run (spec 000 "Durable runs"): the ids are checked up front and
 * thrown to the caller (a durable run never gets a generated `runId`; an
 * attach never gets a generated `threadId`, chat()'s made-up one included),
 * so is the attach preflight (`JournalAttachUnavailableError`), the CLI runs
 * journaled, and an attaching run replays the journal from byte 0 through
 * `alignToStoredLog`.
 * The sandbox's live chunks join an attaching run only once the replay got
 * past what the log holds, because they are this host's, not the journal's.
 * An attach to a live run that never launched its agent (its host went away
 * during setup: no journal, nothing but `RUN_STARTED` and `CUSTOM` chunks in
 * the log) starts the agent fresh with the run's messages, aligned the same
 * way, instead of failing with `journal-timeout` (spec 002, finding 5).
 */
async function* durableHarnessRun(input: RunHarnessOptions, durability: SandboxRunDurability): AsyncGenerator<AdapterYieldChunk, void, undefined> {
  const { harness, options } = input
  if (!input.journal) {
    if (durability.attach) throw new DurableAttachNotSupportedError(harness)
    return yield* guardHarnessRun({ ...input, options, run: (run) => harnessTurn(input, run, undefined) })
  }
  const runId = resolveDurableRunId(options.runId, { durable: true, adapter: harness, fallback: () => `${input.runIdPrefix ?? harness}-${randomUUID()}` })
  // chat() makes up a threadId when the caller passed none: on an attach that one is as good as none.
  const callerThreadId = durability.attach && typeof options.threadId === 'string' && CHAT_GENERATED_THREAD_ID.test(options.threadId) ? undefined : options.threadId
  const threadId = resolveDurableThreadId(callerThreadId, { durable: true, attaching: durability.attach, adapter: harness, fallback: () => runId })
  const journal = journalOptionsFor(durability, runId)!
  const handle = getSandbox(options.capabilities!)
  const files = runFilesOf(handle, journal)
  const requestSignal = (options.request as RequestInit | undefined)?.signal ?? undefined
  /** The agent's run in the sandbox: tailing the existing journal on an attach, unless the run never had an agent (then a fresh start). */
  let turn = durability
  if (durability.attach) {
    // The log already holds the run's end (its host delivered it, then died before the record said so): nothing is
    // left to replay. The journal, if any, is deleted once its sentinel is there.
    if (storedRunEnd((await durability.log.snapshot()).map((entry) => entry.chunk))) {
      options.logger.provider(`${harness}: the log of run ${runId} already holds its end; nothing to attach to`)
      await finishJournal(handle, files, (message) => options.logger.provider(`${harness}: ${message}`))
      return
    }
    if ((await liveRecord(durability, runId)) && (await neverHadAnAgent(handle, files, durability))) {
      // The host that started the run went away before it launched the agent (this host holds the run's claim, so that
      // host is dead or fenced), issue 28: without the attach preflight's wait (10 s by default) for a journal that
      // host will not write. Started fresh at once: the journal is created exclusively, so if that host wakes and
      // launches after all, one of the two launches finds the journal and reads it instead of starting a second agent.
      options.logger.provider(`${harness}: run ${runId} has no journal and its log holds nothing an agent produced (its host went away during setup); starting the agent fresh`)
      turn = { ...durability, attach: false }
    } else try {
      // Up front, so the caller gets the typed error to branch on (404 / 410 / 504), not a RUN_ERROR mid-stream.
      await awaitAttachableJournal(handle, {
        paths: files,
        runId,
        runs: durability.runs,
        logger: options.logger,
        ...(durability.attachWaitMs !== undefined ? { waitMs: durability.attachWaitMs } : {}),
        ...(requestSignal ? { signal: requestSignal } : {}),
      })
    } catch (error) {
      if (!(error instanceof JournalAttachUnavailableError && error.reason === 'journal-timeout') || !(await neverHadAnAgent(handle, files, durability))) throw error
      options.logger.provider(`${harness}: run ${runId} has no journal and its log holds nothing an agent produced (its host went away during setup); starting the agent fresh`)
      turn = { ...durability, attach: false }
    }
  }
  const ids = { ...options, runId, threadId } as TextOptions
  const guarded = guardHarnessRun({ ...input, options: ids, run: (run) => harnessTurn({ ...input, options: ids }, run, { durability: turn, journal, files }) })
  if (!durability.attach) return yield* guarded
  // A fresh start is aligned too: the RUN_STARTED the first host delivered before its agent launched is not delivered again.
  yield* withLiveAfterReplay(alignedIfAttaching(guarded, durability, options.logger), getSandboxRunChunks(options.capabilities!, { optional: true }))
}

/** Whether the run's record is there and `running` (a store that cannot be read, or none, answers no). */
async function liveRecord(durability: SandboxRunDurability, runId: string): Promise<boolean> {
  try {
    return (await durability.runs?.get(runId))?.status === 'running'
  } catch {
    return false
  }
}

/**
 * Whether a run that is still live (the preflight's `journal-timeout`) never
 * launched its agent, so that starting it fresh cannot run the agent twice
 * nor deliver anything twice (spec 002, the boot-window finding 5): the
 * journal is provably absent (`test -f` answers "no", not an error), and the
 * stored log holds only what a host delivers before the agent starts
 * (`RUN_STARTED`, out-of-band `CUSTOM` chunks such as core's `run.accepted`
 * marker or `sandbox.file` events).
 */
async function neverHadAnAgent(handle: SandboxHandle, files: DurableRunFiles, durability: SandboxRunDurability): Promise<boolean> {
  try {
    const probe = await handle.process.exec(journalExistsCommand(files))
    if (probe.exitCode !== 1) return false
    const stored = await durability.log.snapshot()
    return stored.every(({ chunk }) => chunk.type === EventType.RUN_STARTED || chunk.type === EventType.CUSTOM)
  } catch {
    return false
  }
}

/**
 * `replayed`, with `live` merged in from the first chunk `replayed` forwards
 * (the first one past the stored log) on; live chunks that come earlier wait.
 */
async function* withLiveAfterReplay(replayed: AsyncIterable<AdapterYieldChunk>, live: AsyncIterable<StreamChunk> | undefined): AsyncGenerator<AdapterYieldChunk> {
  const it = replayed[Symbol.asyncIterator]()
  const first = await it.next()
  if (first.done) return
  yield first.value
  const rest: AsyncIterable<AdapterYieldChunk> = { [Symbol.asyncIterator]: () => it }
  yield* live ? mergeChunkStreams(rest, live as AsyncIterable<AdapterYieldChunk>) : rest
}

/**
 * The shape of the thread id `chat()` makes up when the caller passed none
 * (`thread-<ms>-<random>`, @tanstack/ai 0.58.0), the same rule `withSandbox`
 * uses to tell a conversation from a one-off run.
 */
const CHAT_GENERATED_THREAD_ID = /^thread-\d{13}-[a-z0-9]{1,12}$/
