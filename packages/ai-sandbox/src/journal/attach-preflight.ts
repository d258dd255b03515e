/**
 * The attach preflight: turns an attach that can never deliver anything into
 * an error instead of an endless tail, asking the sandbox first and the run
 * store second. Never creates, reads or deletes the journal. Invariant: it
 * resolves (journal exists, or aborted) or throws within `waitMs`, and never
 * resolves because a probe failed. Design notes: docs/design/journal.md
 */
import { isTerminalRunStatus, type RunRecord, type RunStore } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import { SandboxError, type SandboxErrorOptions } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import { MAX_TIMER_MS } from '../definition/long-timeout.js'
import { parseOptions } from '../contracts/validate.js'
import { journalExistsCommand, type JournalPaths } from './commands.js'
import { pause } from '../contracts/pause.js'

/**
 * How long an attach waits for a live run's journal to appear, in ms
 * (10 000). It bounds how long an attach request can sit before it answers,
 * so an application putting its own timeout in front of the attach route
 * should know it. Source: spec 004.
 */
export const DEFAULT_ATTACH_JOURNAL_WAIT_MS = 10_000

/** How often the bounded wait probes for the journal again, in ms (100). Source: spec 004. */
export const DEFAULT_ATTACH_PROBE_INTERVAL_MS = 100

/**
 * Why an attach cannot succeed, for an attach route to branch on:
 * `unknown-run` (no journal, and the run store has no such run: a 404),
 * `terminal-run` (no journal, and the run is over: a 410, serve the event log
 * instead), `journal-timeout` (a live or detached run whose journal did not
 * appear, or could not be probed, within the wait: a 504), `journal-stalled`
 * (the journal exists but produced no bytes within the reader's deadline; a
 * 504 too, raised by the journal reader, since this preflight sees an existing
 * file as attachable).
 */
export type AttachUnavailableReason = 'unknown-run' | 'terminal-run' | 'journal-timeout' | 'journal-stalled'

/**
 * An attach cannot succeed, and waiting longer would not change that. One
 * class for every case: branch on `reason` at the attach route.
 *
 * @example
 * ```ts
 * if (JournalAttachUnavailableError.isInstance(error)) {
 *   return new Response(null, { status: error.reason === 'unknown-run' ? 404 : error.reason === 'terminal-run' ? 410 : 504 })
 * }
 * ```
 */
export class JournalAttachUnavailableError extends SandboxError<AttachUnavailableReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/JournalAttachUnavailableError'
  /** The run the attach was for. */
  readonly runId: string

  /**
   * @param runId - The run the attach was for.
   * @param reason - Which case was hit.
   * @param detail - What was found and what to do, appended to `cannot attach to run "<runId>": `.
   */
  constructor(runId: string, reason: AttachUnavailableReason, detail: string, options?: SandboxErrorOptions) {
    super(reason, `cannot attach to run ${JSON.stringify(runId)}: ${detail}`, options)
    this.runId = runId
  }
}

/** Options of {@link awaitAttachableJournal}. */
export interface AwaitAttachableJournalOptions {
  /** The run's journal paths, as `journalPaths(runId)` gives them (absolute). */
  paths: JournalPaths
  /** The run being attached to: the store key and the id in messages. Non-empty. */
  runId: string
  /**
   * The authoritative run store. Without one the unknown/terminal cases
   * cannot be told apart and every missing journal gets the bounded wait.
   */
  runs?: RunStore
  /** Longest wait for a live run's journal, in ms. Default {@link DEFAULT_ATTACH_JOURNAL_WAIT_MS} (10 000); 0 probes once. */
  waitMs?: number
  /** Pause between probes during the wait, in ms (at least 1). Default {@link DEFAULT_ATTACH_PROBE_INTERVAL_MS} (100). */
  probeIntervalMs?: number
  /** The caller's abort: an aborted wait resolves (the caller stopped caring; that says nothing about the run). */
  signal?: AbortSignal
  /** Probe failures go to the `provider` category, a failed store read to `errors`. */
  logger?: InternalLogger
}

const optionsSchema = z
  .object({
    paths: z
      .object({
        dir: z.string().startsWith('/', 'expected an absolute path'),
        journal: z.string().startsWith('/', 'expected an absolute path'),
        stderr: z.string().startsWith('/', 'expected an absolute path'),
      })
      .loose(),
    runId: z.string().min(1, 'expected the non-empty id of the run to attach to'),
    runs: z.custom<RunStore>((v) => typeof v === 'object' && v !== null && typeof (v as RunStore).get === 'function', { message: 'expected a RunStore (an object with a get(runId) method)' }).optional(),
    waitMs: z.number().min(0, 'expected 0 ms or more').max(MAX_TIMER_MS, `expected at most ${MAX_TIMER_MS} ms`).optional(),
    probeIntervalMs: z.number().min(1, 'expected at least 1 ms').max(MAX_TIMER_MS, `expected at most ${MAX_TIMER_MS} ms`).optional(),
    signal: z.custom<AbortSignal>((v) => typeof v === 'object' && v !== null && typeof (v as AbortSignal).aborted === 'boolean' && typeof (v as AbortSignal).addEventListener === 'function', { message: 'expected an AbortSignal' }).optional(),
    logger: z.custom<InternalLogger>((v) => typeof v === 'object' && v !== null && typeof (v as InternalLogger).provider === 'function' && typeof (v as InternalLogger).errors === 'function', { message: "expected chat()'s InternalLogger" }).optional(),
  })
  .strict()

/** The journal is there (`yes`), is not (`no`), or the probe itself failed (`unknown`, with the error). */
type Probe = { readonly found: 'yes' | 'no' } | { readonly found: 'unknown'; readonly error: unknown }

/**
 * Resolve once the run's journal exists and can be tailed, or throw
 * {@link JournalAttachUnavailableError} saying why it never will. Call it
 * before the first read of an attach, never for a fresh run (a fresh run's
 * journal is created by its own spawn, which has not happened yet).
 *
 * | journal  | run record            | decision                              |
 * | -------- | --------------------- | ------------------------------------- |
 * | exists   | (not read)            | resolve; the reader bounds the read   |
 * | absent   | unknown (`null`)      | throw `unknown-run` at once           |
 * | absent   | terminal              | throw `terminal-run` at once          |
 * | absent   | running / interrupted | bounded wait, then `journal-timeout`  |
 * | unusable | running / interrupted | bounded wait, then `journal-timeout`  |
 *
 * No store, or a store whose `get` throws, counts as "no answer" and gets the
 * bounded wait. A probe that fails is retried on every interval and never
 * counts as "exists": resolving would let the reader create the journal and
 * tail it forever. The probe is the shell's `test -f` (`journalExistsCommand`)
 * through `handle.process.exec`, not `handle.fs`, because the journal lives
 * where the agent's shell sees it.
 *
 * @param handle - The sandbox the run's agent runs in.
 * @param options - {@link AwaitAttachableJournalOptions}.
 * @throws SandboxConfigError `invalid-option` for bad options.
 * @throws JournalAttachUnavailableError `unknown-run`, `terminal-run` or `journal-timeout`.
 * @example
 * ```ts
 * await awaitAttachableJournal(handle, { paths: journalPaths(runId), runId, runs, signal })
 * for await (const line of readJournal(handle, { runId, signal })) handle(line)
 * ```
 */
export async function awaitAttachableJournal(handle: SandboxHandle, options: AwaitAttachableJournalOptions): Promise<void> {
  parseOptions(optionsSchema, options, 'awaitAttachableJournal')
  const { runId, paths, signal, waitMs = DEFAULT_ATTACH_JOURNAL_WAIT_MS, probeIntervalMs = DEFAULT_ATTACH_PROBE_INTERVAL_MS } = options

  let probe = await probeJournal(handle, options)
  if (probe.found === 'yes') return

  const record = await readRecord(options)
  if (record === null) {
    throw new JournalAttachUnavailableError(
      runId,
      'unknown-run',
      `the run store has no such run and its journal (${paths.journal}) was never written, so nothing will ever be appended to it. ` +
        `The runId is mistyped, from another deployment, or its record was evicted.`,
    )
  }
  if (record !== undefined && isTerminalRunStatus(record.status)) {
    throw new JournalAttachUnavailableError(
      runId,
      'terminal-run',
      `the run is already '${record.status}' and its journal (${paths.journal}) does not exist, so nothing will ever be appended to it. ` +
        `A finished run's transcript is in its event log: serve the log instead of attaching.`,
    )
  }

  // A live or detached run (or one nobody can tell us about): its driver may not have written its first line yet.
  const deadline = Date.now() + waitMs
  for (;;) {
    const remaining = deadline - Date.now()
    if (remaining <= 0) throw timeout(options, record, probe, waitMs)
    if (signal?.aborted) return
    await pause(Math.min(probeIntervalMs, remaining), signal)
    if (signal?.aborted) return
    probe = await probeJournal(handle, options)
    if (probe.found === 'yes') return
  }
}

/** Run `test -f` on the journal; an exec that throws is `unknown`, never `no`. */
async function probeJournal(handle: SandboxHandle, options: AwaitAttachableJournalOptions): Promise<Probe> {
  try {
    const result = await handle.process.exec(journalExistsCommand(options.paths))
    return { found: result.exitCode === 0 ? 'yes' : 'no' }
  } catch (error) {
    options.logger?.provider(`attach preflight: the journal probe failed for run ${JSON.stringify(options.runId)}; probing again within the bounded wait instead of attaching blind`, { runId: options.runId, error })
    return { found: 'unknown', error }
  }
}

/** The run record; `null` when the store says there is no such run, `undefined` when there is no answer (no store, or `get` threw). */
async function readRecord(options: AwaitAttachableJournalOptions): Promise<RunRecord | null | undefined> {
  if (options.runs === undefined) return undefined
  try {
    return await options.runs.get(options.runId)
  } catch (error) {
    options.logger?.errors(`attach preflight: reading the run record of ${JSON.stringify(options.runId)} failed; treating it as unknown and waiting for the journal`, { runId: options.runId, error })
    return undefined
  }
}

function timeout(options: AwaitAttachableJournalOptions, record: RunRecord | undefined, probe: Probe, waitMs: number): JournalAttachUnavailableError {
  const { runId, paths } = options
  const state = record === undefined ? 'the run record is not available (no run store, or it could not be read)' : `the run record says ${describeRecord(record)}`
  if (probe.found === 'unknown') {
    return new JournalAttachUnavailableError(
      runId,
      'journal-timeout',
      `${state}, and its journal (${paths.journal}) could not be probed within ${waitMs} ms: every '${journalExistsCommand(paths)}' failed. ` +
        `Attaching anyway would create that journal and tail it forever. Check that the sandbox is still alive and that its exec works.`,
      { cause: probe.error },
    )
  }
  return new JournalAttachUnavailableError(
    runId,
    'journal-timeout',
    `${state}, but its journal (${paths.journal}) did not appear within ${waitMs} ms. ` +
      `Either the driver died before writing its first line, or the journal folder differs from the one the agent was started with.`,
  )
}

function describeRecord(record: RunRecord): string {
  return record.detachedSince === undefined ? `status '${record.status}' with a viewer attached` : `status '${record.status}', detached since ${new Date(record.detachedSince).toISOString()}`
}

