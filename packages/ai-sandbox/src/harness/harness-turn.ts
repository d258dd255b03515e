/**
 * One harness turn, top to bottom: check the session id and the prompt, let
 * the adapter prepare its CLI, start it (or tail an attaching run's journal),
 * read its events through the translator and the output gate until a final
 * event ends the run, map how the CLI ended, and let the CLI go. The reading
 * loop's state is {@link ReadState}; the output's is `TurnOutput`. Who stops
 * the run's processes afterwards is decided by {@link cleanupOwner}.
 */
import { randomUUID } from 'node:crypto'
import type { AdapterYieldChunk, ModelMessage, StreamChunk } from '@tanstack/ai'
import { mergeChunkStreams } from '../bridge/bridge-events.js'
import { getSandbox, getSandboxRunChunks } from '../capabilities/tokens.js'
import type { SandboxRunDurability } from '../durability/capability.js'
import type { JournalOptions } from '../journal/journal-options.js'
import { finishJournal } from '../journal/run-end.js'
import type { DurableRunFiles } from '../journal/run-files.js'
import { HARNESS_RUN_TAG_ENV, stopTaggedProcesses } from '../shell/process-tags.js'
import { buildHarnessPrompt } from './build-prompt.js'
import { attachSource, ndjsonSource, QUIET, quietFor, settle } from './event-sources.js'
import type { HarnessRunContext } from './guard-harness-run.js'
import { DEFAULT_EXIT_GRACE_MS, FINAL_EVENT_HOLD_MS, type HarnessEventSource, type HarnessExit, type HarnessLaunch, type RunHarnessOptions } from './harness-launch.js'
import { harnessRunError } from './harness-run-error.js'
import { promptTooLarge } from './prompt-limit.js'
import { createRunScopedIdGen } from './run-scoped-id.js'
import { DEFAULT_MAX_LINE_BYTES } from './spawn-ndjson.js'
import { isTerminalChunk, TurnOutput, usageDecreased } from './turn-output.js'

/** What a journaled turn needs to know: the run's durability, its journal options and the names derived from its id. */
export interface JournaledTurn {
  readonly durability: SandboxRunDurability
  readonly journal: JournalOptions
  readonly files: DurableRunFiles
}

/**
 * Where reading the CLI stands.
 * - `reading`: no final event yet.
 * - `holding`: a final event came; its terminal chunk waits for the CLI's
 *   stdout to end or go quiet (`followed` once an event came after it).
 * - `settling`: the held chunk ended the run; the CLI has its grace period.
 * - `drained`: the CLI's stdout ended.
 */
type ReadState =
  | { readonly phase: 'reading' }
  | { readonly phase: 'holding'; readonly chunk: StreamChunk; followed: boolean }
  | { readonly phase: 'settling'; readonly settled: Promise<void> }
  | { readonly phase: 'drained' }

/**
 * Run one turn of a harness CLI (see `runHarness` for the lifecycle).
 * @param journaled - Set on a durable run of a journaling adapter.
 */
export async function* harnessTurn(input: RunHarnessOptions, run: HarnessRunContext, journaled: JournaledTurn | undefined): AsyncGenerator<AdapterYieldChunk> {
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

  const output = new TurnOutput({ harness, runId, options, genId, launch })
  const emit = (chunks: readonly StreamChunk[]) => output.emit(chunks) as AdapterYieldChunk[]
  // Every process of the run inherits the tag, so what escapes the CLI's process tree can still be stopped when the run ends.
  // A journaled run's tag follows from its id, so a host that attaches later can stop what the first host started.
  const tag = journaled ? journaled.files.tag : randomUUID()
  const env = journaled ? launch.env : { ...launch.env, [HARNESS_RUN_TAG_ENV]: tag }
  const onNonJson = (line: string) => options.logger.provider(`${harness}: non-JSON stdout text: ${run.redact(line.slice(0, 200))}`)
  const maxLineBytes = input.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  const source: HarnessEventSource = attaching
    ? attachSource(handle, journaled!.journal, signal, onNonJson, maxLineBytes)
    : (launch.source?.(signal, env) ?? ndjsonSource(handle, { ...launch, env }, signal, onNonJson, maxLineBytes, journaled ? { journal: journaled.journal, agentEnv: { [HARNESS_RUN_TAG_ENV]: tag } } : undefined))
  options.logger.request(`${harness}: ${run.redact(launch.command)}`, { provider: harness, model: input.model, cwd: launch.cwd })
  const it = source.events[Symbol.asyncIterator]()
  const graceMs = input.exitGraceMs ?? DEFAULT_EXIT_GRACE_MS
  const holdMs = Math.min(FINAL_EVENT_HOLD_MS, graceMs)
  let read = { phase: 'reading' } as ReadState // `as`: the loop below moves it on, out of the compiler's sight
  /** CLI events read (a clean exit after none is `no_output`). */
  let events = 0

  const translated = async function* (): AsyncGenerator<AdapterYieldChunk> {
    let pending: Promise<IteratorResult<unknown>> | undefined
    try {
      for (;;) {
        pending ??= it.next()
        const next = read.phase === 'holding' ? await quietFor(pending, holdMs) : await pending
        if (next === QUIET) {
          // The CLI went quiet after its final event: that event ends the run; the CLI gets its exit grace, in the background.
          yield* emit([(read as Extract<ReadState, { phase: 'holding' }>).chunk])
          read = { phase: 'settling', settled: settle(pending, it, stop, graceMs, (message) => options.logger.provider(`${harness}: ${message}`)) }
          return
        }
        pending = undefined
        if (next.done) {
          // Its stdout ended: a held final event was the CLI's last word.
          const held = read.phase === 'holding' ? read.chunk : undefined
          read = { phase: 'drained' }
          if (held && !signal.aborted) yield* emit([held])
          return
        }
        if (signal.aborted) continue // draining a CLI being stopped
        events++
        options.logger.provider(`${harness} line`, { line: run.redact(JSON.stringify(next.value) ?? '') })
        const stopWith = launch.inspect?.(next.value)
        if (stopWith) {
          yield* emit([stopWith])
          return // the finally stops the CLI at once
        }
        if (read.phase === 'holding' && !read.followed) {
          // An event after a final one: that final event was not the CLI's last word (something wrote into its stdout).
          // A fresh translator reads on; a later final event replaces the held one, which otherwise still ends the run.
          read.followed = true
          translator = input.translator(ids)
          translator.start()
          output.translatorReplaced = true
          yield* emit([output.integrity('events-after-final', 'the CLI printed more events after a final event, so that event did not end the run; the stream holds what an agent CLI says, which a process in the sandbox can forge (see docs/harnesses.md)')])
        }
        const chunks = translator.push(next.value)
        const end = chunks.findIndex(isTerminalChunk)
        yield* emit(end === -1 ? chunks : chunks.slice(0, end))
        if (end === -1) continue
        const final = chunks[end]!
        const decreased = read.phase === 'holding' && usageDecreased(read.chunk, final)
        if (decreased) yield* emit([output.integrity('usage-decreased', `the CLI's final event reports fewer tokens (${decreased.now}) than an earlier final event of the run (${decreased.before}); running totals never go down, so one of them is not the CLI's`, decreased)])
        read = { phase: 'holding', chunk: final, followed: false }
      }
    } finally {
      if (read.phase !== 'drained' && read.phase !== 'settling') {
        stop.abort()
        await it.return?.()
      }
    }
  }

  try {
    let merged: AsyncIterable<AdapterYieldChunk> = translated()
    if (launch.bridge) merged = mergeChunkStreams(merged, launch.bridge.chunks as AsyncIterable<AdapterYieldChunk>)
    // An attaching run merges the live chunks after its replay (see durableHarnessRun).
    const live = attaching ? undefined : getSandboxRunChunks(options.capabilities!, { optional: true })
    if (live) merged = mergeChunkStreams(merged, live as AsyncIterable<AdapterYieldChunk>)
    yield* merged
    if (output.terminal) return
    const exit = source.exit()
    if (timeout?.aborted && !requestSignal?.aborted) {
      return yield* emit([harnessRunError(runId, threadId, `${harness}: the run took longer than timeoutMs (${input.timeoutMs} ms); the CLI was stopped.`, 'timeout')])
    }
    if (requestSignal?.aborted || exit === undefined) return
    if (events === 0 && exit.exitCode === 0 && !exit.signal) {
      // A clean exit that printed nothing is not a success: say what stderr said.
      const gone = sessionId !== undefined ? input.sessionGone?.(exit.stderrTail) : undefined
      return yield* emit([gone ? harnessRunError(runId, threadId, gone, 'session_not_found') : harnessRunError(runId, threadId, noOutputMessage(harness, exit), 'no_output')])
    }
    yield* emit(translator.finish(exit))
  } finally {
    const settled = read.phase === 'settling' ? read.settled : undefined
    if (!settled) stop.abort()
    await launch.bridge?.close()
    if (cleanupOwner({ journaled: journaled !== undefined, terminal: output.terminal, requestAborted: requestSignal?.aborted === true, timedOut: timeout?.aborted === true }) === 'turn') {
      // In the background, once the CLI is gone: the stream (and the RUN_FINISHED core releases when it ends) never waits for the sweep.
      void Promise.resolve(settled)
        .then(async () => {
          // A host that lost the run (a successor claimed it while this one was paused) stops nothing of it: the successor tails the same agent.
          if (journaled?.durability.stillOwned && !(await journaled.durability.stillOwned())) {
            return options.logger.provider(`${harness}: run ${runId} is driven by another host now; its processes and journal are left to it`)
          }
          const report = await stopTaggedProcesses(handle, tag).catch((error: unknown) => void options.logger.provider(`${harness}: could not look for processes the run left behind: ${run.redact(String(error))}`))
          if (report) options.logger.provider(`${harness}: stopped processes the run left behind (${report})`)
          // A kept journal of a run that reached its end goes once that end is in the log (withSandbox); one that ended here without it has no one to keep it for.
          if (journaled && (!journaled.journal.keep || !output.terminal)) await finishJournal(handle, journaled.files, (message) => options.logger.provider(`${harness}: ${message}`))
        })
        .catch((error: unknown) => options.logger.errors(`${harness}: the end-of-run sweep of run ${runId} failed`, { error: run.redact(String(error)) }))
    }
    // The run's files go before the stream ends (a CLI that lingers has read them long ago).
    await Promise.resolve(launch.cleanup?.()).catch((error: unknown) => options.logger.errors(`${harness}: cleaning up after run ${runId} failed`, { error: run.redact(String(error)) }))
  }
}

/**
 * Who stops a turn's leftover processes (and deletes its journal) once its
 * stream is over. A journaled run whose request went away before its end is
 * not over: it detaches or is cancelled, and that verdict is withSandbox's
 * alone (`cancelVerdict` in middleware/run-abort.ts; a cancel ends the agent
 * and the journal through `destroyRun`). Every other end is this turn's.
 */
function cleanupOwner(end: { journaled: boolean; terminal: boolean; requestAborted: boolean; timedOut: boolean }): 'turn' | 'withSandbox' {
  return end.journaled && !end.terminal && end.requestAborted && !end.timedOut ? 'withSandbox' : 'turn'
}

function noOutputMessage(harness: string, exit: HarnessExit): string {
  const tail = exit.stderrTail.trim()
  return `${harness}: the CLI exited ${exit.exitCode} without printing a single event, so the run produced nothing.${tail ? ` Its stderr ends with: ${tail.slice(-2000)}` : ' It wrote nothing to stderr either; check the executable and its version.'}`
}
