/**
 * The bounded journal read: a shell command reading at most N bytes from an
 * offset, and the parser for its result. Source: spec 000 "Reading strategy".
 * Invariant: stdout is one base64 frame of exactly the bytes read; existence
 * and size travel on stderr. Design notes: docs/design/journal.md
 */
import { shellQuote } from '../shell/quote.js'
import { checkedJournalOffset, type JournalPaths } from './commands.js'
import { JournalError } from './errors.js'

/** Block size of {@link journalReadCommand}'s `dd`, whose `skip` seeks (tail -c +N reads everything before N on BusyBox). */
const READ_BLOCK = 65536

/** The stderr line {@link journalReadCommand} prints before the frame when the journal exists: this prefix, then its size in bytes. */
const READ_SIZE_PREFIX = 'journal-size '

/** The stderr line {@link journalReadCommand} prints when there is no journal. */
const READ_MISSING = 'journal-missing'

/**
 * Read at most `maxBytes` of a journal from byte `fromByte`. Its stdout is
 * one base64 frame of exactly the bytes read and nothing else (possibly
 * wrapped at 76 columns; empty when nothing was read or there is no journal),
 * so `decodeBase64Stream` over it recovers them. On stderr it prints
 * `journal-size <bytes>` when the journal exists and `journal-missing` when it
 * does not; it exits 0 either way. {@link parseJournalRead} reads both.
 * Source: spec 000 "Reading strategy" (the bounded read).
 *
 * @param paths - From `journalPaths`.
 * @param fromByte - Absolute byte offset to start at. Default 0.
 * @param maxBytes - Bound of one read, in bytes (at least 1). Default 4 MiB.
 * @returns A POSIX `sh` command (GNU coreutils and BusyBox).
 * @throws JournalError `read-failed` when `fromByte` is not a whole number >= 0 or `maxBytes` not a number >= 1.
 * @example
 * ```ts
 * const { stdout } = await handle.process.exec(journalReadCommand(journalPaths(runId), 0, 65536))
 * for await (const bytes of decodeBase64Stream((async function* () { yield stdout })())) use(bytes)
 * ```
 */
export function journalReadCommand(paths: JournalPaths, fromByte = 0, maxBytes = 4 * 1024 * 1024): string {
  const j = shellQuote(paths.journal)
  const from = checkedJournalOffset(fromByte)
  if (!Number.isFinite(maxBytes) || maxBytes < 1) throw new JournalError('read-failed', `journalReadCommand maxBytes must be a number of bytes >= 1; got ${String(maxBytes)}.`)
  const max = Math.trunc(maxBytes)
  const skip = Math.floor(from / READ_BLOCK)
  const within = from - skip * READ_BLOCK
  const count = Math.ceil((within + max) / READ_BLOCK)
  const read = `dd if=${j} bs=${READ_BLOCK} skip=${skip} count=${count} 2>/dev/null | tail -c +${within + 1} | head -c ${max} | base64`
  // A missing tool would leave an empty frame that reads as "nothing new": fail instead, so parseJournalRead throws.
  return `for t in wc dd tail head base64; do command -v "$t" >/dev/null 2>&1 || { echo "journal read: $t is missing" >&2; exit 127; }; done; if [ -f ${j} ]; then n=$(wc -c < ${j}) || exit 1; echo "${READ_SIZE_PREFIX}$n" >&2; ${read}; else echo ${READ_MISSING} >&2; fi`
}

/** What a bounded read returned: the bytes, and the journal's size when it ran (`undefined`: no journal). */
export interface JournalRead {
  /** The journal's size in bytes when the read ran; `undefined` when there was no journal (an empty one has size 0). */
  readonly size: number | undefined
  /** The bytes read from `fromByte` (empty past the end or without a journal). */
  readonly bytes: Buffer
}

/**
 * Parse what {@link journalReadCommand} printed: the bytes from its base64
 * stdout, and from its stderr the journal's size or that it is missing.
 *
 * @param result - The command's `exec` result (`stdout`, `stderr`; `exitCode` when known).
 * @returns The bytes read and the journal's size (`undefined` without a journal).
 * @throws JournalError `read-failed` when the command exited non-zero, its
 *   stderr has neither status line, or its stdout is not a whole base64 frame.
 * @example
 * ```ts
 * const read = parseJournalRead(await handle.process.exec(journalReadCommand(paths)))
 * if (read.size === undefined) console.log('no journal')
 * ```
 */
export function parseJournalRead(result: { readonly stdout: string; readonly stderr: string; readonly exitCode?: number }): JournalRead {
  const { stdout, stderr, exitCode } = result
  const hint = 'check that the sandbox has wc, dd, tail, head and base64.'
  if (exitCode !== undefined && exitCode !== 0) throw new JournalError('read-failed', `A journal read exited ${exitCode}: ${stderr.slice(0, 500)}`)
  // The status line is ours; anything else on stderr (a shell profile's noise) is ignored.
  const status = stderr
    .split('\n')
    .map((line) => line.trim())
    .findLast((line) => line === READ_MISSING || line.startsWith(READ_SIZE_PREFIX))
  if (status === READ_MISSING) return { size: undefined, bytes: Buffer.alloc(0) }
  const digits = status?.slice(READ_SIZE_PREFIX.length).trim() ?? ''
  const size = /^\d+$/.test(digits) ? Number(digits) : Number.NaN
  if (!Number.isSafeInteger(size)) {
    throw new JournalError('read-failed', `A journal read printed neither its size nor that the journal is missing on stderr (${JSON.stringify(stderr.slice(0, 200))}); ${hint}`)
  }
  const frame = stdout.replace(/\s+/g, '')
  if (/[^A-Za-z0-9+/=]/.test(frame) || frame.length % 4 !== 0) {
    throw new JournalError('read-failed', `A journal read printed something that is not a whole base64 frame (${JSON.stringify(stdout.slice(0, 120))}); ${hint}`)
  }
  return { size, bytes: Buffer.from(frame, 'base64') }
}
