/**
 * Byte framing of journal reads (spec 003 `journal-bytes.ts`): streaming base64
 * decode, provider text back to UTF-8 bytes, and lines carrying the absolute
 * byte position past their newline. Owns positions: they count bytes, never
 * characters. Invariant: a trailing partial line is never yielded.
 * Design notes: docs/design/journal.md
 */
import { SandboxConfigError } from '../contracts/errors.js'
import { LineTooLongError } from './to-lines.js'
import { JournalError } from './errors.js'

/** One complete line of a journal and where it ends. Source: spec 003 `JournalLine`. */
export interface JournalLine {
  /** The line's text without its `\n`, decoded as UTF-8 (invalid bytes become U+FFFD). */
  line: string
  /**
   * Absolute byte offset just past the line's `\n`: the count of journal
   * bytes fully consumed once this line is handled, so the offset a later
   * read resumes from (`readJournal`'s `fromByte`; `tail -c +N` counts from
   * 1, so there N is `endPosition + 1`).
   */
  endPosition: number
}

/** Options of {@link toJournalLines} beyond the spec's two parameters. */
export interface ToJournalLinesOptions {
  /** Refuse a line longer than this many bytes (newline excluded) with `LineTooLongError`. Default: unlimited. */
  readonly maxLineBytes?: number
}

const NEWLINE = 0x0a

/** A character outside the base64 alphabet (and its padding). */
const NOT_BASE64 = /[^A-Za-z0-9+/=]/

/**
 * Decode base64 text that arrives in pieces cut anywhere, such as the stdout
 * of `journalReadCommand` (whitespace and line wrapping are ignored, so
 * BusyBox's 76-column output is fine). Source: spec 003 `decodeBase64Stream`.
 *
 * @param chunks - Base64 text pieces.
 * @returns The decoded bytes, yielded as soon as each whole 4-character group arrived.
 * @throws TypeError naming the first character outside the base64 alphabet;
 *   JournalError `read-failed` when the text ends mid-quantum (a cut frame: base64 always pads) or has
 *   padding anywhere but at its very end (two frames run together would lose bytes).
 * @example
 * ```ts
 * for await (const bytes of decodeBase64Stream(['aGVs', 'bG8K'])) process.stdout.write(bytes) // hello
 * ```
 */
export async function* decodeBase64Stream(chunks: AsyncIterable<string>): AsyncIterable<Uint8Array> {
  let carry = ''
  let ended = false
  for await (const chunk of chunks) {
    // Newlines (the tools' line wrapping) are the only whitespace in practice: dropping them with a plain
    // replaceAll and one test for anything else is a third faster than a \s+ regex pass on every chunk.
    let text = carry + chunk.replaceAll('\n', '')
    if (NOT_BASE64.test(text)) {
      text = text.replace(/\s+/g, '')
      const bad = NOT_BASE64.exec(text)
      if (bad) throw new TypeError(`decodeBase64Stream: ${JSON.stringify(bad[0])} is not a base64 character`)
    }
    const whole = text.length - (text.length % 4)
    const group = text.slice(0, whole)
    carry = text.slice(whole)
    if (group === '') continue
    // Padding closes the frame: it may only end the last quantum, and nothing may follow it (Buffer would drop the rest).
    const pad = group.indexOf('=')
    if (ended || (pad !== -1 && (pad < group.length - 2 || !/^=*$/.test(group.slice(pad)) || carry !== ''))) {
      throw new JournalError('read-failed', 'decodeBase64Stream: padding ("=") inside the base64 frame; one frame ends at its padding, so bytes after it would be lost. Decode each frame on its own.')
    }
    if (pad !== -1) ended = true
    yield Buffer.from(group, 'base64')
  }
  // A remainder means the frame was cut mid-quantum (the reader died partway): decoding it leniently would drop bytes and shift every later position.
  if (carry !== '') throw new JournalError('read-failed', `decodeBase64Stream: the base64 text ended mid-quantum with ${carry.length} character(s) left; the read was cut off. Read again from the last line's endPosition.`)
}

/**
 * Turn text chunks (a provider's decoded stdout of the unframed follow read)
 * back into the UTF-8 bytes they were decoded from. A character cut across
 * two chunks needs no care here: {@link toJournalLines} holds bytes until a
 * newline. Source: spec 003 `encodeUtf8Stream`.
 *
 * @param chunks - Text pieces.
 * @returns Each non-empty piece as UTF-8 bytes; empty pieces are dropped.
 * @example
 * ```ts
 * for await (const line of toJournalLines(encodeUtf8Stream(child.stdout), fromByte)) handle(line)
 * ```
 */
export async function* encodeUtf8Stream(chunks: AsyncIterable<string>): AsyncIterable<Uint8Array> {
  const encoder = new TextEncoder()
  for await (const chunk of chunks) if (chunk.length > 0) yield encoder.encode(chunk)
}

/**
 * Cut journal bytes into lines, each with the absolute byte offset just past
 * its newline. Source: spec 003 `toJournalLines`.
 *
 * @param byteChunks - The journal's bytes from `startPosition` on, in pieces cut anywhere.
 * @param startPosition - Absolute byte offset of the first byte (0, or a line's `endPosition`).
 * @param options - {@link ToJournalLinesOptions} (not in the spec; optional).
 * @returns Each complete line; a trailing line without `\n` is not yielded (its writer is not done).
 * @throws SandboxConfigError `toJournalLines.startPosition` when it is not a whole number >= 0;
 *   LineTooLongError past `maxLineBytes`.
 * @example
 * ```ts
 * for await (const line of toJournalLines(bytes, 100)) line // { line: '{"a":1}', endPosition: 108 } for bytes '{"a":1}\n{"b"'
 * ```
 */
export async function* toJournalLines(byteChunks: AsyncIterable<Uint8Array>, startPosition: number, options: ToJournalLinesOptions = {}): AsyncIterable<JournalLine> {
  if (!Number.isSafeInteger(startPosition) || startPosition < 0) {
    throw new SandboxConfigError('toJournalLines.startPosition', `Invalid argument toJournalLines startPosition: expected the absolute byte offset of the first byte (0, or a line's endPosition), got ${typeof startPosition === 'number' ? String(startPosition) : typeof startPosition}.`)
  }
  const splitter = new JournalLineSplitter(startPosition, options.maxLineBytes)
  for await (const chunk of byteChunks) yield* splitter.push(chunk)
}

/**
 * The incremental splitter behind {@link toJournalLines}, for readers that
 * feed it by hand. `position` is where the unfinished line starts, i.e. where
 * a reader restarting would resume.
 */
export class JournalLineSplitter {
  /** The unfinished line, when it was fed as bytes. */
  private pending: Buffer[] = []
  /** The unfinished line, when it was fed as text. */
  private pendingText = ''
  private pendingBytes = 0
  private readonly decoder = new TextDecoder('utf-8')

  /** @param position - Absolute offset of the first byte to be pushed. */
  constructor(
    public position: number,
    private readonly maxLineBytes?: number,
  ) {}

  /** Bytes held of the unfinished line. */
  get held(): number {
    return this.pendingBytes
  }

  /**
   * Feed bytes, or text (a provider's decoded stdout, counted as UTF-8);
   * returns the lines they completed. Text is split as text, so a follow
   * never pays for encoding and decoding again.
   */
  push(chunk: string | Uint8Array): JournalLine[] {
    if (typeof chunk === 'string') return this.pushText(chunk)
    if (this.pendingText !== '') this.toBytes()
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const lines: JournalLine[] = []
    let from = 0
    for (let at = bytes.indexOf(NEWLINE); at !== -1; at = bytes.indexOf(NEWLINE, from)) {
      const piece = bytes.subarray(from, at)
      const length = this.pendingBytes + piece.length
      this.checkLength(length)
      const whole = this.pendingBytes === 0 ? piece : Buffer.concat([...this.pending, piece], length)
      lines.push(this.line(this.decoder.decode(whole), length))
      this.pending = []
      from = at + 1
    }
    if (from < bytes.length) {
      const rest = bytes.subarray(from)
      this.checkLength(this.pendingBytes + rest.length)
      // Copy: the caller may reuse its buffer.
      this.pending.push(Buffer.from(rest))
      this.pendingBytes += rest.length
    }
    return lines
  }

  /** Forget the unfinished line (a reader restarting from `position`). */
  reset(): void {
    this.pending = []
    this.pendingText = ''
    this.pendingBytes = 0
  }

  private pushText(chunk: string): JournalLine[] {
    if (this.pending.length > 0) this.toText()
    const lines: JournalLine[] = []
    let from = 0
    for (let at = chunk.indexOf('\n'); at !== -1; at = chunk.indexOf('\n', from)) {
      const piece = chunk.slice(from, at)
      const length = this.pendingBytes + Buffer.byteLength(piece)
      this.checkLength(length)
      lines.push(this.line(this.pendingText === '' ? piece : this.pendingText + piece, length))
      this.pendingText = ''
      from = at + 1
    }
    if (from < chunk.length) {
      const rest = chunk.slice(from)
      this.pendingBytes += Buffer.byteLength(rest)
      this.checkLength(this.pendingBytes)
      this.pendingText += rest
    }
    return lines
  }

  /** A finished line of `length` bytes (newline excluded) starting at `position`. */
  private line(text: string, length: number): JournalLine {
    this.position += length + 1
    this.pendingBytes = 0
    return { line: text, endPosition: this.position }
  }

  private toBytes(): void {
    this.pending = [Buffer.from(this.pendingText, 'utf8')]
    this.pendingText = ''
  }

  private toText(): void {
    this.pendingText = Buffer.concat(this.pending).toString('utf8')
    this.pending = []
  }

  private checkLength(length: number): void {
    if (this.maxLineBytes !== undefined && length > this.maxLineBytes) throw new LineTooLongError(this.maxLineBytes)
  }
}
