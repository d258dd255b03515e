/**
 * `readJournal`: stream a run's journal from a byte offset until its genuine
 * exit sentinel, by following or by bounded polls, chosen from capabilities.
 * Owns the reader's life: its `tail` is killed whenever it stops. Never deletes
 * a journal. Source: spec 000 "Reading strategy". One file: both read modes
 * share the reader's state and sentinel check. Design notes: docs/design/journal.md
 */
import type { SandboxCapabilities } from '../contracts/capabilities.js'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SpawnedProcess } from '../contracts/process.js'
import { DEFAULT_ATTACH_JOURNAL_WAIT_MS, JournalAttachUnavailableError } from './attach-preflight.js'
import { JournalLineSplitter, type JournalLine } from './bytes.js'
import { SandboxConfigError } from '../contracts/errors.js'
import { shellQuote } from '../shell/quote.js'
import { journalReadCommand, parseJournalRead } from './bounded-read.js'
import { journalDirOf, journalExistsCommand, journalFollowCommand, journalPaths, type JournalPaths } from './commands.js'
import { JournalError } from './errors.js'
import { expectedJournalHeader, journalTrustOf, parseExitSentinel, parseJournalHeader, type JournalHeader, type JournalTrust } from './sentinel.js'
import { decodeJournalRunId } from './run-id.js'
import { pause } from '../contracts/pause.js'

/** Pause between two bounded reads of the poll strategy, in ms. Source: spec 000 "Reading strategy". */
export const DEFAULT_JOURNAL_POLL_MS = 250

/**
 * How long a reader tolerates no new byte while its follow keeps ending
 * early, or its reads keep failing, before it gives up, in ms (60 s). A
 * follow that stays connected waits for the agent however long it is silent.
 */
export const DEFAULT_JOURNAL_STALL_MS = 60_000

/** Bytes one bounded read asks for (2 MiB). */
const DEFAULT_READ_BYTES = 2 * 1024 * 1024

/** How a journal is read: streamed by a killable `tail -f`, or polled with bounded `exec` reads. */
export type JournalReadStrategy = 'follow' | 'poll'

/**
 * The strategy for a sandbox: `follow` when it can run a background process
 * AND kill it (`backgroundProcesses && killableProcesses`), otherwise `poll`,
 * because a `tail -f` that cannot be killed would outlive its reader.
 * Source: spec 000 "Reading strategy".
 *
 * @param capabilities - The handle's `capabilities`.
 */
export function journalReadStrategy(capabilities: Pick<SandboxCapabilities, 'backgroundProcesses' | 'killableProcesses'>): JournalReadStrategy {
  return capabilities.backgroundProcesses && capabilities.killableProcesses ? 'follow' : 'poll'
}

/** Options of {@link readJournal}: `runId` (with `dir`) or `paths`. */
export interface ReadJournalOptions {
  /** The run whose journal to read; or pass `paths`. */
  runId?: string
  /** Journal folder for `runId`. Default `DEFAULT_JOURNAL_DIR`. */
  dir?: string
  /** The journal's paths, as `journalPaths` returns them (instead of `runId`). */
  paths?: JournalPaths
  /** Absolute byte offset to start at: a line's `endPosition` from an earlier read. Default 0. */
  fromByte?: number
  /** Stops the read: the `tail` is killed and the iteration ends without an error. */
  signal?: AbortSignal
  /** Override the capability-based choice (tests, or a provider whose `kill` you distrust). */
  strategy?: JournalReadStrategy
  /** Pause between polls, in ms. Default {@link DEFAULT_JOURNAL_POLL_MS}. */
  pollMs?: number
  /**
   * A journal that has no byte at all after this many ms (nobody writes it:
   * an agent shell killed before its header, or a journal only a reader
   * created) fails the read with `JournalAttachUnavailableError`
   * `journal-stalled`. Default `DEFAULT_ATTACH_JOURNAL_WAIT_MS` (10 s).
   */
  emptyWaitMs?: number
  /** See {@link DEFAULT_JOURNAL_STALL_MS}. */
  stallMs?: number
  /** Bytes one poll reads at most. Default 2 MiB. */
  readBytes?: number
  /** Refuse a longer line with `LineTooLongError` (bytes). Default unlimited. */
  maxLineBytes?: number
  /** Called once when the genuine sentinel is read, before the iteration ends: the agent's exit code, and `end`, the byte offset just past the sentinel's newline. */
  onExit?: (exit: { exitCode: number; end: number }) => void
}

/**
 * Yield the agent's lines of a journal (the header, the sentinel and empty
 * lines are not yielded) from `fromByte` until the genuine exit sentinel, then end. A line
 * that merely looks like a sentinel (`{"__exit":0}` printed by the agent, a
 * guessed nonce) is an ordinary line. Each yielded line carries absolute byte
 * position, so a later reader can resume at `line.endPosition`.
 *
 * @param handle - The sandbox (capability `exec`; `backgroundProcesses` + `killableProcesses` to follow).
 * @param options - {@link ReadJournalOptions}.
 * @returns The journal's lines, in order.
 * @throws JournalAttachUnavailableError `journal-stalled` when the journal
 *   stays empty for `emptyWaitMs`, or gets no new byte for `stallMs` while
 *   the follow keeps ending early; JournalError `journal-unsupported` when the
 *   journal's shell could not draw its nonce, `read-failed` when reads fail
 *   for `stallMs`; LineTooLongError past `maxLineBytes`.
 * @example
 * ```ts
 * for await (const line of readJournal(handle, { runId, onExit: ({ exitCode }) => console.log('exit', exitCode) })) {
 *   console.log(line.endPosition, JSON.parse(line.line))
 * }
 * ```
 */
export async function* readJournal(handle: SandboxHandle, options: ReadJournalOptions): AsyncIterable<JournalLine> {
  const paths = options.paths ?? journalPaths(requireRunId(options.runId), journalDirOf(handle, options.dir))
  const runId = options.runId ?? paths.journal
  const strategy = options.strategy ?? journalReadStrategy(handle.capabilities)
  const from = options.fromByte ?? 0
  if (!Number.isSafeInteger(from) || from < 0) {
    throw new SandboxConfigError('readJournal.fromByte', `Invalid option readJournal.fromByte: expected a whole number of bytes >= 0 (a line's \`endPosition\` from an earlier read), got ${String(from)}.`)
  }
  // A reader given only paths still checks against the secret: the id is the journal's name, decoded.
  const trust = journalTrustOf(handle, options.runId ?? runIdOfPaths(paths))
  if (handle.journalSecret !== undefined && trust === undefined) {
    throw new JournalError('invalid-run-id', `readJournal: ${paths.journal} is not a journal name encodeRunId writes, so its run id (which the sandbox's journalSecret needs) is unknown; pass runId.`)
  }
  const state: ReaderState = {
    handle,
    paths,
    runId,
    options,
    splitter: new JournalLineSplitter(from, options.maxLineBytes),
    trust,
    header: from === 0 ? undefined : checkedHeader(runId, await readHeader(handle, paths, runId, from), trust),
    headerRead: from !== 0,
    bytesSeen: 0,
    startedAt: Date.now(),
    lastProgressAt: Date.now(),
    exited: false,
  }
  const lines = strategy === 'follow' ? follow(state) : poll(state)
  for await (const batch of lines) {
    for (const line of batch) {
      const kind = classify(state, line)
      // Empty lines carry nothing (the shell writes one before its sentinel, in case the agent's last line had no newline).
      if (kind === 'line' && line.line !== '') yield line
      else if (kind === 'exit') return
    }
  }
}

interface ReaderState {
  readonly handle: SandboxHandle
  readonly paths: JournalPaths
  readonly runId: string
  readonly options: ReadJournalOptions
  readonly splitter: JournalLineSplitter
  /** The provider's `journalSecret` and the run id, when it keeps one: the journal's own header is then only compared with what they give. */
  readonly trust: JournalTrust | undefined
  header: JournalHeader | undefined
  headerRead: boolean
  bytesSeen: number
  readonly startedAt: number
  lastProgressAt: number
  exited: boolean
  /** The last follow's stderr (a failed `mkdir`, a `tail` that could not open the file). */
  lastStderr?: string
}

/** What a line is to the reader: the header (skipped), the genuine sentinel (the end), or the agent's. */
function classify(state: ReaderState, line: JournalLine): 'header' | 'exit' | 'line' {
  if (!state.headerRead) {
    state.headerRead = true
    state.header = checkedHeader(state.runId, parseJournalHeader(line.line), state.trust)
    return 'header'
  }
  if (state.exited) return 'exit'
  const sentinel = parseExitSentinel(line.line, state.header)
  if (!sentinel) return 'line'
  state.exited = true
  state.options.onExit?.({ exitCode: sentinel.exitCode, end: line.endPosition })
  return 'exit'
}

/** Batches of lines from `tail -f`, re-followed from the last whole line whenever the stream ends before the sentinel. */
async function* follow(state: ReaderState): AsyncIterable<JournalLine[]> {
  const { handle, options, splitter } = state
  const signal = options.signal
  while (!signal?.aborted && !state.exited) {
    let child: SpawnedProcess | undefined
    let stalled = false
    const stop = () => void child?.kill().catch(() => undefined)
    signal?.addEventListener('abort', stop, { once: true })
    const emptyTimer = state.bytesSeen === 0 ? setTimeout(() => ((stalled = true), stop()), remainingEmptyWait(state)) : undefined
    try {
      splitter.reset()
      try {
        child = await handle.process.spawn(journalFollowCommand(state.paths, splitter.position))
      } catch (error) {
        checkStall(state, error)
        await pause(options.pollMs ?? DEFAULT_JOURNAL_POLL_MS, signal)
        continue
      }
      if (signal?.aborted) return
      const stderr = drain(child.stderr)
      for await (const chunk of child.stdout) {
        const lineStart = splitter.position
        const lines = await resync(state, lineStart, splitter.push(chunk))
        progress(state, chunk)
        if (state.bytesSeen > 0) clearTimeout(emptyTimer)
        if (lines.length > 0) yield lines
        if (state.exited || signal?.aborted) return
      }
      state.lastStderr = (await stderr).trim()
      if (stalled && state.bytesSeen === 0) throw emptyStall(state)
      if (signal?.aborted || state.exited) return
      // Ended without the sentinel: not an exit. Follow again from the last whole line,
      // unless the journal is gone (a follow would create it again, empty, and wait for nothing).
      if (state.bytesSeen > 0 && !(await journalExists(state))) throw deletedJournal(state)
      checkStall(state, undefined)
      await pause(options.pollMs ?? DEFAULT_JOURNAL_POLL_MS, signal)
    } finally {
      clearTimeout(emptyTimer)
      signal?.removeEventListener('abort', stop)
      if (child) await child.kill().catch(() => undefined)
    }
  }
}

/** Batches of lines from bounded base64 reads, resumed where the last read stopped. */
async function* poll(state: ReaderState): AsyncIterable<JournalLine[]> {
  const { handle, options, splitter } = state
  const signal = options.signal
  const readBytes = Math.max(1, options.readBytes ?? DEFAULT_READ_BYTES)
  while (!signal?.aborted && !state.exited) {
    let bytes: Buffer
    try {
      const result = await handle.process.exec(journalReadCommand(state.paths, splitter.position + splitter.held, readBytes))
      if (result.exitCode !== 0) throw new JournalError('read-failed', `A journal read exited ${result.exitCode}: ${result.stderr.slice(0, 500)}`, { runId: state.runId })
      const read = parseJournalRead(result)
      if (read.size === undefined && state.bytesSeen > 0) throw deletedJournal(state)
      bytes = read.bytes
    } catch (error) {
      if (JournalAttachUnavailableError.isInstance(error)) throw error
      if (signal?.aborted) return
      checkStall(state, error)
      await pause(options.pollMs ?? DEFAULT_JOURNAL_POLL_MS, signal)
      continue
    }
    if (bytes.length > 0) {
      const lines = splitter.push(bytes)
      progress(state, bytes)
      if (lines.length > 0) yield lines
      if (state.exited) return
    } else if (state.bytesSeen === 0 && remainingEmptyWait(state) <= 0) {
      throw emptyStall(state)
    }
    // A full read means more is waiting: read on at once.
    if (bytes.length < readBytes) await pause(options.pollMs ?? DEFAULT_JOURNAL_POLL_MS, signal)
  }
}

function progress(state: ReaderState, chunk: string | Uint8Array): void {
  const length = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength
  if (length === 0) return
  state.bytesSeen += length
  state.lastProgressAt = Date.now()
}

/** Throw once nothing new arrived for `stallMs` (a journal nobody writes any more, or reads that keep failing). */
function checkStall(state: ReaderState, error: unknown): void {
  const stallMs = state.options.stallMs ?? DEFAULT_JOURNAL_STALL_MS
  if (state.bytesSeen === 0 && error === undefined && remainingEmptyWait(state) <= 0) throw emptyStall(state)
  if (Date.now() - state.lastProgressAt < stallMs) return
  if (error !== undefined) {
    throw new JournalError('read-failed', `Reading the journal of run ${JSON.stringify(state.runId)} failed for ${stallMs} ms: ${error instanceof Error ? error.message : String(error)}`, { runId: state.runId, cause: error })
  }
  throw new JournalAttachUnavailableError(
    state.runId,
    'journal-stalled',
    `its journal (${state.paths.journal}) got no new byte for ${stallMs} ms and the follow kept ending without the exit sentinel; the agent's shell is gone or the sandbox no longer answers.`,
  )
}

function remainingEmptyWait(state: ReaderState): number {
  return state.startedAt + (state.options.emptyWaitMs ?? DEFAULT_ATTACH_JOURNAL_WAIT_MS) - Date.now()
}

function emptyStall(state: ReaderState): JournalAttachUnavailableError {
  const waited = state.options.emptyWaitMs ?? DEFAULT_ATTACH_JOURNAL_WAIT_MS
  // A follow creates the journal before tailing it: an empty one left behind would make every later attach think it exists.
  void state.handle.process.exec(`[ -s ${shellQuote(state.paths.journal)} ] || rm -f ${shellQuote(state.paths.journal)}`).catch(() => undefined)
  const why = state.lastStderr ? ` The follow printed: ${state.lastStderr.slice(0, 300)}` : ''
  return new JournalAttachUnavailableError(
    state.runId,
    'journal-stalled',
    `its journal (${state.paths.journal}) received no byte within ${waited} ms, so no exit sentinel can come: the agent's shell was killed before it started, nobody started it, or the journal folder is not writable.${why}`,
  )
}

function deletedJournal(state: ReaderState): JournalAttachUnavailableError {
  return new JournalAttachUnavailableError(
    state.runId,
    'journal-stalled',
    `its journal (${state.paths.journal}) was deleted before this reader saw the exit sentinel: another reader of the run read the sentinel first (the run's own reader deletes the journal), or a sweep removed it. The run's transcript is in its event log.`,
  )
}

async function journalExists(state: ReaderState): Promise<boolean> {
  try {
    return (await state.handle.process.exec(journalExistsCommand(state.paths))).exitCode === 0
  } catch {
    return true // unknown: follow again, bounded by stallMs
  }
}

/**
 * Correct the byte positions of lines a follow delivered as text. A provider
 * decodes stdout as UTF-8, so invalid bytes arrive as U+FFFD, which counts 3
 * bytes when the text is measured again. A line holding U+FFFD is therefore
 * measured in the journal itself (one bounded read from its start), and
 * every later position shifts by the difference.
 *
 * @param start - Where the first of `lines` starts (the splitter's position before the push).
 */
async function resync(state: ReaderState, start: number, lines: JournalLine[]): Promise<JournalLine[]> {
  if (!lines.some((line) => line.line.includes('\uFFFD'))) return lines
  let delta = 0
  const out: JournalLine[] = []
  for (const line of lines) {
    let end = line.endPosition + delta
    if (line.line.includes('\uFFFD')) {
      const result = await state.handle.process.exec(journalReadCommand(state.paths, start, end - start))
      const newline = result.exitCode === 0 ? parseJournalRead(result).bytes.indexOf(0x0a) : -1
      if (newline !== -1) {
        delta += start + newline + 1 - end
        end = start + newline + 1
      }
    }
    out.push({ line: line.line, endPosition: end })
    start = end
  }
  state.splitter.position += delta
  return out
}

/**
 * The header a reader checks sentinels against, from the journal's first
 * line: the trusted one when the provider keeps a secret (the journal's must
 * then match it), else the journal's own. A first line that is no header, or
 * not the one the provider's secret gives, means the journal was rewritten after its shell
 * started it (by the agent: it runs as the journal's user), and nothing in it
 * can say the run ended (issue 27, item 4).
 *
 * @throws JournalError `journal-unsupported` for the header of a shell that could not draw its nonce; `journal-rewritten` as above.
 */
function checkedHeader(runId: string, header: JournalHeader | undefined, trust: JournalTrust | undefined): JournalHeader {
  if (header?.error !== undefined && trust === undefined) {
    throw new JournalError('journal-unsupported', `The journal of run ${JSON.stringify(runId)} could not be started: ${header.error}.`, { runId })
  }
  const expected = expectedJournalHeader(header, trust)
  if (header?.nonceHash === undefined || expected?.nonceHash !== header.nonceHash) {
    throw new JournalError(
      'journal-rewritten',
      `The journal of run ${JSON.stringify(runId)} does not start with the header its shell wrote${trust !== undefined ? ' (its nonce hash is not the one the provider secret gives)' : ''}: it was rewritten after the run started, by the agent or another process of the sandbox's user, so it cannot tell how the run ended. Treat the run as failed.`,
      { runId },
    )
  }
  return expected
}

/** The run id a journal path names, when it is one `encodeRunId` writes under its folder. */
function runIdOfPaths(paths: JournalPaths): string | undefined {
  if (!paths.journal.startsWith(`${paths.dir}/`)) return undefined
  const decoded = decodeJournalRunId(paths.journal.slice(paths.dir.length + 1))
  return decoded.ok ? decoded.runId : undefined
}

/** The header of a journal read from the middle: its first line, read on its own. */
async function readHeader(handle: SandboxHandle, paths: JournalPaths, runId: string, fromByte: number): Promise<JournalHeader | undefined> {
  const result = await handle.process.exec(journalReadCommand(paths, 0, 4096))
  if (result.exitCode !== 0) throw new JournalError('read-failed', `Reading the header of the journal of run ${JSON.stringify(runId)} failed: ${result.stderr.slice(0, 500)}`, { runId })
  const read = parseJournalRead(result)
  // A resume point is a line's endPosition: inside the journal, right after a newline.
  const before = read.size !== undefined && fromByte <= read.size ? (fromByte <= read.bytes.length ? read.bytes.subarray(fromByte - 1, fromByte) : parseJournalRead(await handle.process.exec(journalReadCommand(paths, fromByte - 1, 1))).bytes) : undefined
  if (before?.[0] !== 0x0a) {
    throw new SandboxConfigError(
      'readJournal.fromByte',
      `Invalid option readJournal.fromByte: ${fromByte} is not where a line of the journal of run ${JSON.stringify(runId)} starts (${read.size === undefined ? 'the journal does not exist' : `the journal has ${read.size} bytes`}); pass a line's \`endPosition\` from an earlier read, or 0.`,
    )
  }
  const text = read.bytes.toString('utf8')
  const newline = text.indexOf('\n')
  return newline === -1 ? undefined : parseJournalHeader(text.slice(0, newline))
}

function requireRunId(runId: string | undefined): string {
  if (runId === undefined) throw new JournalError('invalid-run-id', 'readJournal needs `runId` or `paths`.')
  return runId
}

/** Read a stream to its end; returns its last 1000 characters (the follow's stderr is diagnostics only). */
async function drain(stream: AsyncIterable<string>): Promise<string> {
  let tail = ''
  try {
    for await (const chunk of stream) tail = (tail + chunk).slice(-1000)
  } catch {
    // Diagnostics only.
  }
  return tail
}

