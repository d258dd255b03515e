/**
 * The journaled path of `spawnNdjson`: start an agent CLI with stdout going to
 * the run's journal in the sandbox (`startJournaledAgent`) and read it back as
 * NDJSON (`readJournalNdjson`). Owns starting, the exit report and deleting the
 * journal after its own reader saw the sentinel; reading is `journal/reader.ts`.
 * Source: spec 000 "Durable runs (the run journal)". Design notes: docs/design/journal.md
 */
import { randomBytes } from 'node:crypto'
import { SandboxOperationError } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import { JOURNAL_EXISTS_EXIT, journalCleanupCommand, journalDirOf, journaledCommand, journalLaunchStdin, journalPaths, journalStderrTailCommand, type JournalPaths } from './commands.js'
import { journalNonce } from './sentinel.js'
import { JournalError } from './errors.js'
import type { JournalOptions } from './journal-options.js'
import { readJournal, type ReadJournalOptions } from './reader.js'
import { shellQuote } from '../shell/quote.js'
import { writeSandboxRunFile } from '../shell/sandbox-run-file.js'
import { NOT_JSON, parseNdjsonLine } from './ndjson-line.js'

/** How the process of a {@link spawnNdjson} run ended. */
export interface SpawnNdjsonExit {
  /** Exit code; 128+N when the process died of signal N. */
  readonly exitCode: number
  /** The signal name when the process was killed by one, e.g. `SIGTERM`. */
  readonly signal?: string
  /** The last `stderrTailLength` characters of stderr (all of it when shorter). */
  readonly stderrTail: string
}

/** Options of {@link startJournaledAgent}. */
export interface StartJournaledAgentOptions {
  journal: JournalOptions
  /** Working directory inside the sandbox. */
  cwd?: string
  /** Environment of the agent and of the shell that waits for it. */
  env?: Record<string, string>
  /**
   * Variables only the agent gets, not the shell that writes the sentinel:
   * a tag that a process sweep kills by (the sentinel must survive it).
   */
  agentEnv?: Record<string, string>
  /** Text the agent reads on stdin; written to a file beside the journal, deleted as the agent starts. */
  stdin?: string
}

/**
 * Start `command` journaled and return once it is launched (not when it
 * exits). The start is an `exec`, not a `spawn`: the agent runs in the
 * background with none of the caller's descriptors, so it needs no live
 * process handle on the host and no killable processes on the provider.
 * Deliberately takes no `AbortSignal`: aborting a reader must never stop the
 * agent (that is what a detach is). Stop it by destroying the sandbox, or by
 * a process sweep over `agentEnv`'s tag.
 *
 * @param handle - The sandbox (capability `exec`).
 * @param command - The agent's POSIX shell command line.
 * @param options - {@link StartJournaledAgentOptions}.
 * @returns The journal's paths.
 * @throws JournalError `invalid-run-id` for an unusable `journal.runId`;
 *   `journal-exists` when the run's journal is there already (its agent was
 *   launched by another host; nothing was started: read that journal);
 *   SandboxOperationError `exec-failed` when the launch exits non-zero (the
 *   journal folder cannot be created, or the nonce tools are missing).
 * @example
 * ```ts
 * const paths = await startJournaledAgent(handle, 'claude -p --output-format stream-json "hi"', { journal: { runId }, cwd: '/workspace' })
 * ```
 */
export async function startJournaledAgent(handle: SandboxHandle, command: string, options: StartJournaledAgentOptions): Promise<JournalPaths> {
  const paths = journalPaths(options.journal.runId, journalDirOf(handle, options.journal.dir))
  // A provider that keeps a secret outside the sandbox hands the nonce in on stdin: readers then compute its hash themselves.
  const salt = randomBytes(16).toString('hex')
  // Each launch's stdin file has a name of its own: a second launch of the run (which starts nothing) removes only its own.
  const stdinFile = options.stdin === undefined ? undefined : await writeSandboxRunFile(handle, { file: `${paths.journal}.stdin-${salt.slice(0, 16)}`, content: options.stdin, harness: 'journal', what: 'the agent stdin file' })
  const exports = Object.entries(options.agentEnv ?? {})
    .map(([name, value]) => `export ${checkedName(name)}=${shellQuote(value)}; `)
    .join('')
  const nonce = handle.journalSecret === undefined ? undefined : journalNonce(handle.journalSecret, options.journal.runId, salt)
  const result = await handle.process.exec(journaledCommand(paths, `${exports}${command}`, { ...(stdinFile === undefined ? {} : { stdinFile }), nonceFromStdin: nonce !== undefined }), {
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.env !== undefined ? { env: options.env } : {}),
    ...(nonce !== undefined ? { stdin: journalLaunchStdin(nonce, salt) } : {}),
  })
  if (result.exitCode === JOURNAL_EXISTS_EXIT) {
    if (stdinFile !== undefined) await handle.process.exec(`rm -f ${shellQuote(stdinFile)}`).catch(() => undefined)
    throw new JournalError('journal-exists', `The agent of run ${JSON.stringify(options.journal.runId)} was not started: its journal ${paths.journal} exists already, so another host launched it. Read that journal instead (readJournalNdjson).`, { runId: options.journal.runId })
  }
  if (result.exitCode !== 0) {
    throw new SandboxOperationError('exec-failed', handle.provider, `Could not start the journaled agent of run ${JSON.stringify(options.journal.runId)} (exit ${result.exitCode}): ${result.stderr.trim() || 'no stderr'}. The journal needs a writable ${paths.dir} of its own (not a link, not another user's, not mounted noexec) and sh, mkdir, chmod, cp, od, tr, sha256sum in the sandbox.`)
  }
  return paths
}

/** Options of {@link readJournalNdjson}. */
export interface ReadJournalNdjsonOptions extends Omit<ReadJournalOptions, 'runId' | 'dir' | 'paths' | 'onExit'> {
  journal: JournalOptions
  /** Called with each non-JSON text, as in `spawnNdjson`. */
  onNonJsonLine?: (line: string) => void
  /** Called once after the genuine sentinel, with the exit code and the end of the `.err` sidecar. */
  onExit?: (exit: SpawnNdjsonExit) => void | Promise<void>
  /** Characters of stderr kept for `stderrTail`. Default 65536. */
  stderrTailLength?: number
  /** Delete both journal files once the sentinel was read. Default `true` (the run's own reader); an observer passes `false`. */
  deleteOnExit?: boolean
}

/**
 * Read a run's journal as parsed NDJSON values until its genuine exit
 * sentinel, following or polling per the sandbox's capabilities (see
 * `readJournal`). After the sentinel: the `.err` tail is read, both files
 * are deleted (unless `deleteOnExit: false` or `journal.keep`), then `onExit` runs. Aborting
 * `signal` stops the reading only; the agent runs on.
 *
 * @param handle - The sandbox.
 * @param options - {@link ReadJournalNdjsonOptions}.
 * @returns Parsed JSON values, one per journal line, in order.
 * @throws what `readJournal` throws; any error thrown by a callback.
 */
export async function* readJournalNdjson(handle: SandboxHandle, options: ReadJournalNdjsonOptions): AsyncIterable<unknown> {
  const { journal, onNonJsonLine, onExit } = options
  const paths = journalPaths(journal.runId, journalDirOf(handle, journal.dir))
  let exitCode: number | undefined
  const lines = readJournal(handle, {
    ...options,
    ...pickReaderTuning(journal),
    runId: journal.runId,
    paths,
    onExit: (exit) => {
      exitCode = exit.exitCode
    },
  })
  for await (const line of lines) {
    if (line.line.trim() === '') continue
    const { value, noise } = parseNdjsonLine(line.line)
    if (noise !== undefined) onNonJsonLine?.(noise)
    if (value !== NOT_JSON) yield value
  }
  if (exitCode === undefined) return // aborted
  const limit = Math.max(0, options.stderrTailLength ?? 64 * 1024)
  const stderrTail = limit === 0 ? '' : await handle.process.exec(journalStderrTailCommand(paths, limit * 4)).then(
    (result) => result.stdout.slice(-limit),
    () => '',
  )
  if (options.deleteOnExit !== false && !journal.keep) await handle.process.exec(journalCleanupCommand(paths)).catch(() => undefined)
  await onExit?.({ exitCode, stderrTail })
}

function pickReaderTuning(journal: JournalOptions): Pick<ReadJournalOptions, 'strategy' | 'pollMs' | 'emptyWaitMs' | 'stallMs'> {
  const out: Pick<ReadJournalOptions, 'strategy' | 'pollMs' | 'emptyWaitMs' | 'stallMs'> = {}
  if (journal.strategy !== undefined) out.strategy = journal.strategy
  if (journal.pollMs !== undefined) out.pollMs = journal.pollMs
  if (journal.emptyWaitMs !== undefined) out.emptyWaitMs = journal.emptyWaitMs
  if (journal.stallMs !== undefined) out.stallMs = journal.stallMs
  return out
}

function checkedName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError(`startJournaledAgent: ${JSON.stringify(name)} is not an environment variable name`)
  return name
}
