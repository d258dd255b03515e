/**
 * Byte framing of journal reads: base64 text decoded as it streams, and bytes
 * cut into lines that carry their absolute byte positions in the journal.
 * Owns positions: every reader resumes from a line's `end`, so a position
 * must count the journal's bytes exactly, never characters.
 * Invariant: a trailing partial line is never yielded; it is the next read's
 * start.
 */
import { LineTooLongError } from '../harness/to-lines.js'
import { JournalError } from './errors.js'

/** One complete line of a journal. */
export interface JournalLine {
  /** The line's text without its `\n`, decoded as UTF-8 (invalid bytes become U+FFFD). */
  readonly text: string
  /** Absolute byte offset of the line's first byte. */
  readonly start: number
  /** Absolute byte offset just past its `\n`: where the next line starts. */
  readonly end: number
}

const NEWLINE = 0x0a

/**
 * Decode base64 text that arrives in pieces cut anywhere (whitespace and line
 * wrapping ignored, so BusyBox's 76-column output is fine). Source: spec 003.
 *
 * @param chunks - Base64 text pieces.
 * @returns The decoded bytes, as soon as each whole 4-character group arrived.
 * @throws TypeError naming the first character outside the base64 alphabet;
 *   JournalError `read-failed` when the text ends mid-quantum (a cut frame: base64 always pads).
 * @example
 * ```ts
 * for await (const bytes of decodeBase64Stream(['aGVs', 'bG8K'])) process.stdout.write(bytes) // hello
 * ```
 */
export async function* decodeBase64Stream(chunks: AsyncIterable<string>): AsyncIterable<Uint8Array> {
  let carry = ''
  for await (const chunk of chunks) {
    const text = carry + chunk.replace(/\s+/g, '')
    const bad = /[^A-Za-z0-9+/=]/.exec(text)
    if (bad) throw new TypeError(`decodeBase64Stream: ${JSON.stringify(bad[0])} is not a base64 character`)
    const whole = text.length - (text.length % 4)
    carry = text.slice(whole)
    if (whole > 0) yield Buffer.from(text.slice(0, whole), 'base64')
  }
  // A remainder means the frame was cut mid-quantum (the reader died partway): decoding it leniently would drop bytes and shift every later position.
  if (carry !== '') throw new JournalError('read-failed', `decodeBase64Stream: the base64 text ended mid-quantum with ${carry.length} character(s) left; the read was cut off. Read again from the last line's end.`)
}

/**
 * Cut journal bytes into lines with absolute byte positions. Strings are
 * taken as UTF-8 (what a provider's decoded stdout is). Source: spec 003.
 *
 * @param chunks - The journal's bytes from `startByte` on, in pieces cut anywhere.
 * @param options - `startByte`: the absolute offset of the first byte (default 0);
 *   `maxLineBytes`: refuse a longer line with `LineTooLongError` (default unlimited).
 * @returns Each complete line; a trailing line without `\n` is not yielded.
 * @example
 * ```ts
 * for await (const line of toJournalLines(['{"a":1}\n{"b"'], { startByte: 100 })) line // { text: '{"a":1}', start: 100, end: 108 }
 * ```
 */
export async function* toJournalLines(chunks: AsyncIterable<string | Uint8Array>, options: { startByte?: number; maxLineBytes?: number } = {}): AsyncIterable<JournalLine> {
  const splitter = new JournalLineSplitter(options.startByte ?? 0, options.maxLineBytes)
  for await (const chunk of chunks) yield* splitter.push(chunk)
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
    const start = this.position
    this.position += length + 1
    this.pendingBytes = 0
    return { text, start, end: this.position }
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
