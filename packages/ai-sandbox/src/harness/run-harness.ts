/**
 * `runHarness`: the one run loop every harness adapter shares. A run reads
 * top to bottom: fix the ids and the prompt, let the adapter prepare its CLI
 * (files, flags, its tool bridge), spawn it, merge the translated stream with
 * the bridge's and the sandbox's live chunks, end the stream at the CLI's
 * final event (held until its stdout ends or goes quiet, so a forged final
 * line followed by the real run does not end it), then settle the CLI (a
 * grace period, then its process tree is stopped) and map how it ended. An adapter supplies only what is its own:
 * the translator, the session-id rule and `prepare`.
 * On a durable run (`SandboxDurabilityCapability`), an adapter that opts in
 * (`journal: true`) runs its CLI journaled, and an attaching run tails that
 * journal from byte 0 instead of starting the CLI (see `durableHarnessRun`).
 * Invariant: the stream ends with exactly one `RUN_FINISHED` or `RUN_ERROR`
 * (none when the request was aborted), and no tool call is left open.
 * Source: docs/harnesses.md "Run lifecycle", docs/journal.md.
 */
import { randomUUID } from 'node:crypto'
import type { AdapterYieldChunk, ModelMessage, StreamChunk, TextOptions } from '@tanstack/ai'
import { EventType } from '@tanstack/ai'
import type { SandboxHandle } from '../contracts/handle.js'
import { isBridgeUnavailableChunk, mergeChunkStreams, TOOL_BRIDGE_UNAVAILABLE_EVENT } from '../bridge/bridge-events.js'
import type { RunToolBridge } from './open-run-tool-bridge.js'
import { getSandbox, getSandboxRunChunks } from '../capabilities/tokens.js'
import { alignedIfAttaching, journalOptionsFor, type SandboxRunDurability } from '../durability/capability.js'
import { getSandboxDurability } from '../capabilities/tokens.js'
import { awaitAttachableJournal, JournalAttachUnavailableError } from '../journal/attach-preflight.js'
import { journalDirOf, journalExistsCommand, journalPaths } from '../journal/commands.js'
import { finishJournal } from './journal-run-end.js'
import { durableRunFiles } from '../journal/run-files.js'
import { storedRunEnd } from '../durability/run-outcome.js'
import { DurableAttachNotSupportedError, resolveDurableRunId, resolveDurableThreadId } from './durable-ids.js'
import type { JournalOptions } from '../journal/journal-options.js'
import { readJournalNdjson } from './journaled-spawn.js'
import { buildHarnessPrompt } from './build-prompt.js'
import { guardHarnessRun, type GuardHarnessRunOptions, type HarnessRunContext } from './guard-harness-run.js'
import { harnessRunError } from './harness-run-error.js'
import { promptTooLarge } from './prompt-limit.js'
import { createOpenToolCalls } from './open-tool-calls.js'
import { createRunScopedIdGen } from './run-scoped-id.js'
import { DEFAULT_MAX_LINE_BYTES, spawnNdjson } from './spawn-ndjson.js'
import { HARNESS_RUN_TAG_ENV, stopTaggedProcesses } from './stop-run-processes.js'

/** How long a CLI may take to exit by itself after its final event before its process tree is stopped, in ms. */
export const DEFAULT_EXIT_GRACE_MS = 3000

// Defined beside spawnNdjson (its default too); re-exported here, where adapters have always imported it.
export { DEFAULT_MAX_LINE_BYTES }

/**
 * How long a final event (one the translator turns into `RUN_FINISHED` or
 * `RUN_ERROR`) is held before it ends the stream while the CLI neither exits
 * nor prints another event, in ms (capped at `exitGraceMs`). A CLI that exits
 * ends the hold at once. An event printed during the hold means the held one
 * was not the CLI's last word (a script in the sandbox can write lines into
 * the CLI's stdout): the hold goes on and a later final event replaces it.
 */
export const FINAL_EVENT_HOLD_MS = 250

/**
 * `CUSTOM` event of a harness run whose event stream looks tampered with:
 * `value` is `{ kind, message, ... }`, `kind` one of `events-after-final`
 * (the CLI printed more events after a final event, which therefore did not
 * end the run), `usage-decreased` (a later final event reports fewer tokens
 * than an earlier one: running totals never go down) and
 * `duplicate-tool-result` (a second result for one tool call, dropped). Also
 * logged as a warning. Source: docs/harnesses.md "What the stream can be trusted with".
 */
export const HARNESS_INTEGRITY_EVENT = 'harness.integrity'

/** How the CLI of a run ended. */
export interface HarnessExit {
  /** Exit code; 128+N when the process died of signal N. */
  readonly exitCode: number
  /** The signal name when the process was killed by one. */
  readonly signal?: string
  /** The end of its stderr (64 KiB at most). */
  readonly stderrTail: string
}

/** A CLI's event translator as the loop drives it: pure, fed in order. */
export interface HarnessTranslator {
  /** The run's opening chunks (`RUN_STARTED`). */
  start: () => readonly StreamChunk[]
  /** The chunks for one CLI event (a parsed NDJSON line, an ACP message). */
  push: (event: unknown) => readonly StreamChunk[]
  /** The closing chunks when the CLI exited before a terminal chunk; empty once one was emitted. */
  finish: (exit: HarnessExit) => readonly StreamChunk[]
}

/** A CLI that is not an NDJSON writer (ACP over stdio): the adapter drives it and hands the loop its events. */
export interface HarnessEventSource {
  /** The CLI's events in order. Ends once the CLI exited, or was stopped because `signal` aborted. */
  readonly events: AsyncIterable<unknown>
  /** How the CLI ended; read once `events` ended. */
  readonly exit: () => HarnessExit | undefined
}

/** What an adapter's `prepare` returns: the CLI to start, or a `RUN_ERROR` to end the run with. */
export type HarnessLaunch =
  | {
      /** POSIX shell command (for `source` runs, what the logs show). */
      readonly command: string
      /** Absolute working directory inside the sandbox. */
      readonly cwd: string
      readonly env: Record<string, string>
      /** Text for the CLI's stdin (only on providers with `writableStdin`). */
      readonly stdin?: string
      /** The run's tool bridge; the loop merges its chunks and closes it. */
      readonly bridge?: RunToolBridge
      /**
       * When the CLI reaches its MCP servers: `'at-start'` (default; Claude
       * Code, Codex, OpenCode list the tools when they start), so a run that
       * finished without the bridge ever contacted is reported as
       * `tool-bridge.unavailable`; or `'on-call'`, when only a tool call
       * contacts it, so silence proves nothing and is not reported.
       */
      readonly bridgeContact?: 'at-start' | 'on-call'
      /** Drive the CLI yourself instead of reading NDJSON from its stdout. Aborting `signal` must stop it; start it with `env` (the launch's, plus the run's process tag). */
      readonly source?: (signal: AbortSignal, env: Record<string, string>) => HarnessEventSource
      /** Look at each raw event before it is translated; a chunk returned ends the run with it and stops the CLI at once. */
      readonly inspect?: (event: unknown) => StreamChunk | undefined
      /** Runs after the CLI settled or was stopped (remove run files). Errors are logged. */
      readonly cleanup?: () => Promise<void>
    }
  | { readonly end: StreamChunk }

/** What `prepare` gets. */
export interface HarnessPrepareContext extends HarnessRunContext {
  readonly handle: SandboxHandle
  /** The prompt text for the CLI (the latest user turn, or the transcript when starting fresh). */
  readonly prompt: string
  /** `modelOptions.sessionId` when the run resumes a CLI session (already validated). */
  readonly sessionId?: string
  /** Aborts with the request or the timeout: stop preparing. */
  readonly signal: AbortSignal
}

/** Options of {@link runHarness}. */
export interface RunHarnessOptions extends Omit<GuardHarnessRunOptions, 'run' | 'options'> {
  /** `chatStream`'s options. */
  options: TextOptions
  /** The model id, for the request log. */
  model: string
  /** The translator for this run. */
  translator: (ids: { runId: string; threadId: string; genId: () => string; sessionId?: string }) => HarnessTranslator
  /** Accepts a `modelOptions.sessionId`; a refused one ends the run with `RUN_ERROR` `invalid_session_id` and this message. */
  sessionId?: { pattern: RegExp; refused: (sessionId: string) => string }
  /** When a resumed run's CLI printed nothing, read its stderr: a message when it says the session does not exist (the run ends with `RUN_ERROR` `session_not_found`). */
  sessionGone?: (stderrTail: string) => string | undefined
  /** The prompt; default `buildHarnessPrompt(messages, resumed)`. An empty one ends the run with `RUN_ERROR` `no_prompt`. */
  prompt?: (messages: ModelMessage[], resumed: boolean) => string
  /** Write the CLI's files and build its command. */
  prepare: (context: HarnessPrepareContext) => Promise<HarnessLaunch>
  /** Stop the run after this many ms with `RUN_ERROR` `timeout`. Default: no limit. */
  timeoutMs?: number
  /** See {@link DEFAULT_EXIT_GRACE_MS}. */
  exitGraceMs?: number
  /** See {@link DEFAULT_MAX_LINE_BYTES}. */
  maxLineBytes?: number
  /**
   * The adapter's CLI writes NDJSON to stdout and can run journaled: on a
   * durable run (`getSandboxDurability` set by `withSandbox`) its stdout goes
   * to the run journal, and an attaching run tails that journal instead of
   * starting the CLI. Adapters that cannot (an ACP conversation) leave it
   * unset: their durable runs work as before, and an attach throws
   * `DurableAttachNotSupportedError`. Default `false`.
   */
  journal?: boolean
}

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
  const requestSignal = (options.request as RequestInit | undefined)?.signal ?? undefined
  /** The agent's run in the sandbox: tailing the existing journal on an attach, unless the run never had an agent (then a fresh start). */
  let turn = durability
  if (durability.attach) {
    const handle = getSandbox(options.capabilities!)
    const paths = journalPaths(runId, journalDirOf(handle, journal.dir))
    // The log already holds the run's end (its host delivered it, then died before the record said so): nothing is
    // left to replay. The journal, if any, is deleted once its sentinel is there.
    if (storedRunEnd((await durability.log.snapshot()).map((entry) => entry.chunk))) {
      options.logger.provider(`${harness}: the log of run ${runId} already holds its end; nothing to attach to`)
      await finishJournal(handle, journal, (message) => options.logger.provider(`${harness}: ${message}`))
      return
    }
    if ((await liveRecord(durability, runId)) && (await neverHadAnAgent(handle, paths, durability))) {
      // The host that started the run went away before it launched the agent (this host holds the run's claim, so that
      // host is dead or fenced), issue 28: without the attach preflight's wait (10 s by default) for a journal that
      // host will not write. Started fresh at once: the journal is created exclusively, so if that host wakes and
      // launches after all, one of the two launches finds the journal and reads it instead of starting a second agent.
      options.logger.provider(`${harness}: run ${runId} has no journal and its log holds nothing an agent produced (its host went away during setup); starting the agent fresh`)
      turn = { ...durability, attach: false }
    } else try {
      // Up front, so the caller gets the typed error to branch on (404 / 410 / 504), not a RUN_ERROR mid-stream.
      await awaitAttachableJournal(handle, {
        paths,
        runId,
        runs: durability.runs,
        logger: options.logger,
        ...(durability.attachWaitMs !== undefined ? { waitMs: durability.attachWaitMs } : {}),
        ...(requestSignal ? { signal: requestSignal } : {}),
      })
    } catch (error) {
      if (!(error instanceof JournalAttachUnavailableError && error.reason === 'journal-timeout') || !(await neverHadAnAgent(handle, paths, durability))) throw error
      options.logger.provider(`${harness}: run ${runId} has no journal and its log holds nothing an agent produced (its host went away during setup); starting the agent fresh`)
      turn = { ...durability, attach: false }
    }
  }
  const ids = { ...options, runId, threadId } as TextOptions
  const guarded = guardHarnessRun({ ...input, options: ids, run: (run) => harnessTurn({ ...input, options: ids }, run, { durability: turn, journal }) })
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
async function neverHadAnAgent(handle: SandboxHandle, paths: ReturnType<typeof journalPaths>, durability: SandboxRunDurability): Promise<boolean> {
  try {
    const probe = await handle.process.exec(journalExistsCommand(paths))
    if (probe.exitCode !== 1) return false
    const stored = await durability.log.snapshot()
    return stored.every(({ chunk }) => chunk.type === EventType.RUN_STARTED || chunk.type === EventType.CUSTOM)
  } catch {
    return false
  }
}

/** What a journaled run needs to know. */
interface JournaledTurn {
  readonly durability: SandboxRunDurability
  readonly journal: JournalOptions
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

async function* harnessTurn(input: RunHarnessOptions, run: HarnessRunContext, journaled: JournaledTurn | undefined): AsyncGenerator<AdapterYieldChunk> {
  const { harness, options } = input
  const { runId, threadId } = run
  const attaching = journaled?.durability.attach === true
  const handle = getSandbox(options.capabilities!)
  const genId = createRunScopedIdGen(runId)
  const rawSession = options.modelOptions?.sessionId
  const sessionId = typeof rawSession === 'string' ? rawSession : undefined
  const ids = { runId, threadId, genId, ...(sessionId ? { sessionId } : {}) }
  let translator = input.translator(ids)
  const prompt = (input.prompt ?? buildHarnessPrompt)(options.messages as ModelMessage[], sessionId !== undefined)
  yield* translator.start() as AdapterYieldChunk[]
  if (sessionId !== undefined && input.sessionId && !input.sessionId.pattern.test(sessionId)) {
    return yield harnessRunError(runId, threadId, input.sessionId.refused(sessionId), 'invalid_session_id')
  }
  // An attach asks the CLI nothing: the prompt went to it when the run started.
  if (!attaching && prompt.trim() === '') {
    return yield harnessRunError(runId, threadId, `${harness}: the latest user message has no text to send. Pass a { role: "user" } message with text to chat().`, 'no_prompt')
  }
  // withSandbox checked this before the sandbox existed; a run whose sandbox came another way is checked here.
  const tooLarge = attaching ? undefined : promptTooLarge(harness, options.messages as ModelMessage[])
  if (tooLarge) return yield harnessRunError(runId, threadId, tooLarge.message, tooLarge.code)

  const requestSignal = (options.request as RequestInit | undefined)?.signal ?? undefined
  const timeout = input.timeoutMs ? AbortSignal.timeout(input.timeoutMs) : undefined
  // Stops the CLI: when the run is over, when the consumer leaves, after the grace period.
  const stop = new AbortController()
  const signal = AbortSignal.any([stop.signal, ...(requestSignal ? [requestSignal] : []), ...(timeout ? [timeout] : [])])
  const launch: HarnessLaunch = attaching ? { command: `(attach to the journal of run ${runId})`, cwd: handle.workspaceRoot, env: {} } : await input.prepare({ ...run, handle, prompt, ...(sessionId ? { sessionId } : {}), signal })
  if ('end' in launch) return yield launch.end as AdapterYieldChunk

  const { bridge } = launch
  const open = createOpenToolCalls(genId)
  let settling: Promise<void> | undefined
  let events = 0
  let terminal = false
  let bridgeReported = false
  let exit: HarnessExit | undefined
  /** Tool calls that got their result; a second result for one is dropped. */
  const resulted = new Set<string>()
  /** `CUSTOM` chunks already sent (name and value), so a replaced translator does not announce the session twice. */
  const sentCustom = new Set<string>()
  /** Set when an event after a final event made the loop start a fresh translator. */
  let translatorReplaced = false
  const integrity = (kind: string, message: string, extra: Record<string, unknown> = {}): StreamChunk => {
    options.logger.warn(`${harness}: ${message}`)
    return { type: EventType.CUSTOM, name: HARNESS_INTEGRITY_EVENT, value: { kind, message, ...extra }, timestamp: Date.now() }
  }
  /** Everything passes here: closes open tool calls and reports a silent bridge before the terminal chunk. */
  const emit = (chunks: readonly StreamChunk[]): StreamChunk[] => {
    const out: StreamChunk[] = []
    for (const chunk of chunks) {
      if (terminal) break
      if (chunk.type === EventType.TOOL_CALL_RESULT) {
        if (resulted.has(chunk.toolCallId)) {
          out.push(integrity('duplicate-tool-result', `the CLI reported a second result for tool call ${chunk.toolCallId}; it was dropped, and the first one may not be the CLI's`, { toolCallId: chunk.toolCallId }))
          continue
        }
        resulted.add(chunk.toolCallId)
      }
      if (chunk.type === EventType.CUSTOM && chunk.name !== HARNESS_INTEGRITY_EVENT) {
        const key = `${chunk.name}\u0000${JSON.stringify(chunk.value) ?? ''}`
        if (translatorReplaced && sentCustom.has(key)) continue
        sentCustom.add(key)
      }
      if (isBridgeUnavailableChunk(chunk)) {
        bridgeReported = true
        options.logger.warn(`${harness}: ${(chunk.value as { reason?: string }).reason ?? 'the host tool bridge is not available to the agent'}`)
      }
      if (chunk.type === EventType.RUN_FINISHED || chunk.type === EventType.RUN_ERROR) {
        terminal = true
        out.push(...open.close(`the run ended before the tool call returned a result (${chunk.type === EventType.RUN_ERROR ? 'the run failed' : 'the agent finished without it'})`))
        if (chunk.type === EventType.RUN_FINISHED && bridge && launch.bridgeContact !== 'on-call' && !bridgeReported && !bridge.contacted()) out.push(silentBridgeChunk(harness, options))
        if (chunk.type === EventType.RUN_FINISHED && chunk.usage === undefined) options.logger.provider(`${harness}: the CLI reported no token usage for run ${runId}, so RUN_FINISHED carries none`)
      }
      open.observe(chunk)
      out.push(harnessFinish(chunk))
    }
    return out
  }

  // Every process of the run inherits the tag, so what escapes the CLI's process tree can still be stopped when the run ends.
  // A journaled run's tag follows from its id, so a host that attaches later can stop what the first host started.
  const tag = journaled ? durableRunFiles(runId).tag : randomUUID()
  const env = journaled ? launch.env : { ...launch.env, [HARNESS_RUN_TAG_ENV]: tag }
  const sweep = () =>
    stopTaggedProcesses(handle, tag).then(
      (report) => report && options.logger.provider(`${harness}: stopped processes the run left behind (${report})`),
      (error: unknown) => options.logger.provider(`${harness}: could not look for processes the run left behind: ${run.redact(String(error))}`),
    )
  const onNonJson = (line: string) => options.logger.provider(`${harness}: non-JSON stdout text: ${run.redact(line.slice(0, 200))}`)
  const maxLineBytes = input.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  const source = attaching
    ? attachSource(handle, journaled!, signal, onNonJson, maxLineBytes)
    : (launch.source?.(signal, env) ?? ndjsonSource(handle, { ...launch, env }, signal, onNonJson, maxLineBytes, journaled ? { journal: journaled.journal, agentEnv: { [HARNESS_RUN_TAG_ENV]: tag } } : undefined))
  options.logger.request(`${harness}: ${run.redact(launch.command)}`, { provider: harness, model: input.model, cwd: launch.cwd })
  const it = source.events[Symbol.asyncIterator]()
  const graceMs = input.exitGraceMs ?? DEFAULT_EXIT_GRACE_MS
  const holdMs = Math.min(FINAL_EVENT_HOLD_MS, graceMs)
  const translated = async function* (): AsyncGenerator<AdapterYieldChunk> {
    let done = false
    /** The terminal chunk of the latest final event, not sent yet; `followed` once an event came after it. */
    let held: { chunk: StreamChunk; followed: boolean } | undefined
    let pending: Promise<IteratorResult<unknown>> | undefined
    try {
      for (;;) {
        pending ??= it.next()
        const next = held ? await quietFor(pending, holdMs) : await pending
        if (next === QUIET) {
          // The CLI went quiet after its final event: that event ends the run; the CLI gets its exit grace, in the background.
          yield* emit([held!.chunk]) as AdapterYieldChunk[]
          settling = settle(pending, it, stop, graceMs, (message) => options.logger.provider(`${harness}: ${message}`))
          return
        }
        pending = undefined
        if (next.done) {
          done = true
          // Its stdout ended: the held final event was the CLI's last word.
          if (held && !signal.aborted) yield* emit([held.chunk]) as AdapterYieldChunk[]
          return
        }
        if (signal.aborted) continue // draining a CLI being stopped
        events++
        options.logger.provider(`${harness} line`, { line: run.redact(JSON.stringify(next.value) ?? '') })
        const stopWith = launch.inspect?.(next.value)
        if (stopWith) {
          yield* emit([stopWith]) as AdapterYieldChunk[]
          return // the finally stops the CLI at once
        }
        if (held && !held.followed) {
          // An event after a final one: that final event was not the CLI's last word (something wrote into its stdout).
          // A fresh translator reads on; a later final event replaces the held one, which otherwise still ends the run.
          held.followed = true
          translator = input.translator(ids)
          translator.start()
          translatorReplaced = true
          yield* emit([integrity('events-after-final', 'the CLI printed more events after a final event, so that event did not end the run; the stream holds what an agent CLI says, which a process in the sandbox can forge (see docs/harnesses.md)')]) as AdapterYieldChunk[]
        }
        const chunks = translator.push(next.value)
        const end = chunks.findIndex((chunk) => chunk.type === EventType.RUN_FINISHED || chunk.type === EventType.RUN_ERROR)
        yield* emit(end === -1 ? chunks : chunks.slice(0, end)) as AdapterYieldChunk[]
        if (end === -1) continue
        const final = chunks[end]!
        const decreased = held && usageDecreased(held.chunk, final)
        if (decreased) yield* emit([integrity('usage-decreased', `the CLI's final event reports fewer tokens (${decreased.now}) than an earlier final event of the run (${decreased.before}); running totals never go down, so one of them is not the CLI's`, decreased)]) as AdapterYieldChunk[]
        held = { chunk: final, followed: false }
      }
    } finally {
      if (!done && !settling) {
        stop.abort()
        await it.return?.()
      }
    }
  }

  try {
    let merged: AsyncIterable<AdapterYieldChunk> = translated()
    if (bridge) merged = mergeChunkStreams(merged, bridge.chunks as AsyncIterable<AdapterYieldChunk>)
    // An attaching run merges the live chunks after its replay (see durableHarnessRun).
    const live = attaching ? undefined : getSandboxRunChunks(options.capabilities!, { optional: true })
    if (live) merged = mergeChunkStreams(merged, live as AsyncIterable<AdapterYieldChunk>)
    yield* merged
    if (terminal) return
    exit = source.exit()
    if (timeout?.aborted && !requestSignal?.aborted) {
      return yield* emit([harnessRunError(runId, threadId, `${harness}: the run took longer than timeoutMs (${input.timeoutMs} ms); the CLI was stopped.`, 'timeout')]) as AdapterYieldChunk[]
    }
    if (requestSignal?.aborted || exit === undefined) return
    if (events === 0 && exit.exitCode === 0 && !exit.signal) {
      // A clean exit that printed nothing is not a success: say what stderr said.
      const gone = sessionId !== undefined ? input.sessionGone?.(exit.stderrTail) : undefined
      return yield* emit([gone ? harnessRunError(runId, threadId, gone, 'session_not_found') : harnessRunError(runId, threadId, noOutputMessage(harness, exit), 'no_output')]) as AdapterYieldChunk[]
    }
    yield* emit(translator.finish(exit)) as AdapterYieldChunk[]
  } finally {
    if (!settling) stop.abort()
    await bridge?.close()
    // A journaled run whose request went away before it ended is detached, not over: its agent runs on and its journal stays.
    const detached = journaled !== undefined && !terminal && requestSignal?.aborted === true && !timeout?.aborted
    // In the background, once the CLI is gone: the stream (and the RUN_FINISHED core releases when it ends) never waits for the sweep.
    if (!detached) {
      void Promise.resolve(settling)
        .then(async () => {
          // A host that lost the run (a successor claimed it while this one was paused) stops nothing of it: the successor tails the same agent.
          if (journaled?.durability.stillOwned && !(await journaled.durability.stillOwned())) {
            return options.logger.provider(`${harness}: run ${runId} is driven by another host now; its processes and journal are left to it`)
          }
          await sweep()
          // A kept journal of a run that reached its end goes once that end is in the log (withSandbox); one that ended here without it has no one to keep it for.
          if (journaled && (!journaled.journal.keep || !terminal)) await finishJournal(handle, journaled.journal, (message) => options.logger.provider(`${harness}: ${message}`))
        })
        .catch((error: unknown) => options.logger.errors(`${harness}: the end-of-run sweep of run ${runId} failed`, { error: run.redact(String(error)) }))
    }
    // The run's files go before the stream ends (a CLI that lingers has read them long ago).
    await Promise.resolve(launch.cleanup?.()).catch((error: unknown) => options.logger.errors(`${harness}: cleaning up after run ${runId} failed`, { error: run.redact(String(error)) }))
  }
}

/**
 * A harness runs its tools inside the CLI (bridged ones included, which carry
 * the app's tool names): a `RUN_FINISHED` with `finishReason: 'tool_calls'`
 * would make `chat()` execute them a second time on the host, so it becomes `stop`.
 */
function harnessFinish(chunk: StreamChunk): StreamChunk {
  return chunk.type === EventType.RUN_FINISHED && chunk.finishReason === 'tool_calls' ? { ...chunk, finishReason: 'stop' } : chunk
}

/**
 * Read NDJSON from the CLI's stdout; the job is stopped when the CLI exits, so
 * nothing it left running survives the run. Journaled: the CLI's stdout goes
 * to the run journal and is read back from there (`spawnNdjson`'s `journal`).
 */
function ndjsonSource(handle: SandboxHandle, launch: Extract<HarnessLaunch, { command: string }>, signal: AbortSignal, onNonJson: (line: string) => void, maxLineBytes: number, journaled?: { journal: JournalOptions; agentEnv: Record<string, string> }): HarnessEventSource {
  let exit: HarnessExit | undefined
  const events = spawnNdjson(handle, launch.command, {
    ...(journaled ?? {}),
    cwd: launch.cwd,
    env: launch.env,
    ...(launch.stdin !== undefined ? { stdin: launch.stdin } : {}),
    signal,
    stopJobOnExit: true,
    maxLineBytes,
    onNonJsonLine: onNonJson,
    onExit: (result) => {
      exit = result
    },
  })
  return { events, exit: () => exit }
}

/**
 * An attaching run's events: the existing journal from byte 0 (the preflight
 * in `durableHarnessRun` found it), never a second CLI.
 */
function attachSource(handle: SandboxHandle, journaled: JournaledTurn, signal: AbortSignal, onNonJson: (line: string) => void, maxLineBytes: number): HarnessEventSource {
  let exit: HarnessExit | undefined
  const { journal } = journaled
  const events = (async function* () {
    if (signal.aborted) return
    yield* readJournalNdjson(handle, { journal, signal, maxLineBytes, onNonJsonLine: onNonJson, onExit: (result) => void (exit = result) })
  })()
  return { events, exit: () => exit }
}

/**
 * The shape of the thread id `chat()` makes up when the caller passed none
 * (`thread-<ms>-<random>`, @tanstack/ai 0.58.0), the same rule `withSandbox`
 * uses to tell a conversation from a one-off run.
 */
const CHAT_GENERATED_THREAD_ID = /^thread-\d{13}-[a-z0-9]{1,12}$/

/** What {@link quietFor} resolves to when nothing came in time. */
const QUIET = Symbol('quiet')

/** `next`, or {@link QUIET} when it has not settled within `ms`; `next` itself is left running. */
async function quietFor<T>(next: Promise<T>, ms: number): Promise<T | typeof QUIET> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([next, new Promise<typeof QUIET>((resolve) => (timer = setTimeout(() => resolve(QUIET), Math.max(0, ms))))])
  } finally {
    clearTimeout(timer)
  }
}

/** Total tokens of a `RUN_FINISHED`'s usage, or `undefined`. */
function totalTokens(chunk: StreamChunk): number | undefined {
  const usage = (chunk as { usage?: { totalTokens?: number; promptTokens?: number; completionTokens?: number } }).usage
  if (!usage) return undefined
  return usage.totalTokens ?? (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0)
}

/** When `now` reports fewer total tokens than `before` (both with usage): the two totals. */
function usageDecreased(before: StreamChunk, now: StreamChunk): { before: number; now: number } | undefined {
  const [a, b] = [totalTokens(before), totalTokens(now)]
  return a !== undefined && b !== undefined && b < a ? { before: a, now: b } : undefined
}

/**
 * Drain what the CLI still prints after the final event that ended the run
 * (dropped, and counted in the log); stop it after `graceMs`. `pending` is a
 * read already under way. Never rejects.
 */
async function settle(pending: Promise<IteratorResult<unknown>> | undefined, it: AsyncIterator<unknown>, stop: AbortController, graceMs: number, log: (message: string) => void): Promise<void> {
  const timer = setTimeout(() => {
    log(`the CLI did not exit within its grace period after its final event; stopping its process group`)
    stop.abort()
  }, Math.max(0, graceMs))
  let dropped = 0
  try {
    for (;;) {
      const next = await (pending ?? it.next())
      pending = undefined
      if (next.done) break
      if (!stop.signal.aborted) dropped++
    }
  } catch (error) {
    log(`reading the CLI after its final event failed: ${String(error)}`)
  } finally {
    clearTimeout(timer)
    stop.abort()
    if (dropped > 0) log(`the CLI printed ${dropped} more event(s) after the final event that ended the run; they were dropped`)
  }
}

/** The warning chunk for a bridge the agent never contacted although the run finished. */
function silentBridgeChunk(harness: string, options: TextOptions): StreamChunk {
  const reason = `the agent never contacted the host tool bridge (MCP server "tanstack"), so the chat() tools were not available to it in this run. Check that the sandbox can reach the host (see docs/tools.md).`
  options.logger.warn(`${harness}: ${reason}`)
  return { type: EventType.CUSTOM, name: TOOL_BRIDGE_UNAVAILABLE_EVENT, value: { server: 'tanstack', status: 'not-contacted', reason }, timestamp: Date.now() }
}

function noOutputMessage(harness: string, exit: HarnessExit): string {
  const tail = exit.stderrTail.trim()
  return `${harness}: the CLI exited ${exit.exitCode} without printing a single event, so the run produced nothing.${tail ? ` Its stderr ends with: ${tail.slice(-2000)}` : ' It wrote nothing to stderr either; check the executable and its version.'}`
}
