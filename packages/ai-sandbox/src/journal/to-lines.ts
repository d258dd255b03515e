/**
 * `toLines`: split a stream of text or byte chunks into lines, the framing every
 * NDJSON reader of a harness builds on. Owns decoding (one streaming UTF-8
 * decoder per stream) and line splitting; it never parses what a line contains.
 * Invariant: each input character is scanned once and each line is joined once,
 * so a multi-megabyte line costs linear time, however many chunks carry it.
 */
import { SandboxLimitError } from '../contracts/errors.js'

/** Options of {@link toLines}. */
export interface ToLinesOptions {
  /**
   * Refuse a line longer than this many UTF-8 bytes (terminator excluded) by
   * throwing {@link LineTooLongError}, so a runaway writer cannot grow memory
   * without bound. Default: unlimited.
   */
  maxLineBytes?: number
}

/**
 * Thrown by {@link toLines} when a line grows past `maxLineBytes`: a
 * {@link SandboxLimitError} with reason `line-too-long`, thrown as soon as the
 * unfinished line passes the bound (it is never held whole first).
 *
 * @example
 * ```ts
 * try { for await (const line of toLines(chunks, { maxLineBytes: 1 << 20 })) use(line) }
 * catch (error) { if (LineTooLongError.isInstance(error)) console.log(error.maxLineBytes) }
 * ```
 */
export class LineTooLongError extends SandboxLimitError<'line-too-long'> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/LineTooLongError'
  /** The limit that was exceeded, in UTF-8 bytes (the same as `limitBytes`). */
  readonly maxLineBytes: number

  /**
   * @param maxLineBytes - The bound, in UTF-8 bytes.
   * @param option - The option that sets it, as a user writes it (default `maxLineBytes`).
   */
  constructor(maxLineBytes: number, option = 'maxLineBytes') {
    super('line-too-long', {
      limitBytes: maxLineBytes,
      option,
      message:
        `A line of output exceeded ${maxLineBytes} bytes before its newline arrived, so reading stopped. ` +
        `Raise ${option}, or make the command emit shorter lines.`,
    })
    this.maxLineBytes = maxLineBytes
  }
}

/**
 * Split chunks into lines. Byte chunks are decoded as UTF-8 with one streaming
 * decoder, so a character split across chunks comes out whole (invalid bytes
 * become U+FFFD); string chunks are taken as already decoded. Lines end at
 * `\n` or `\r\n` (terminator removed; a lone `\r` is kept as content). A final
 * line without a newline is yielded at the end of the stream; an empty stream
 * or one ending in a newline yields no extra empty line.
 *
 * @param chunks - Text or bytes, in order, e.g. a spawned process's `stdout`.
 * @param options - {@link ToLinesOptions}; `maxLineBytes` defaults to unlimited.
 * @returns The lines, without terminators, in order.
 * @throws LineTooLongError `line-too-long` when a line passes `maxLineBytes`.
 * @example
 * ```ts
 * async function* chunks() { yield 'a\r\nb'; yield new TextEncoder().encode('c\nd') }
 * for await (const line of toLines(chunks())) console.log(line) // a, bc, d
 * ```
 */
export async function* toLines(
  chunks: AsyncIterable<string | Uint8Array>,
  options: ToLinesOptions = {},
): AsyncIterable<string> {
  const { maxLineBytes } = options
  const splitter = new LineSplitter(maxLineBytes)
  const decoder = new TextDecoder()
  for await (const chunk of chunks) {
    // A string after bytes: flush the decoder first so text stays in order.
    const text = typeof chunk === 'string' ? decoder.decode() + chunk : decoder.decode(chunk, { stream: true })
    if (text.length > 0) yield* splitter.push(text)
  }
  yield* splitter.push(decoder.decode())
  const last = splitter.end()
  if (last !== undefined) yield last
}

/** Keeps the pieces of the unfinished line and joins them only when its newline arrives. */
class LineSplitter {
  private pending: string[] = []
  private pendingBytes = 0

  constructor(private readonly maxLineBytes: number | undefined) {}

  /** Feed decoded text; returns the lines it completed. */
  push(text: string): string[] {
    const lines: string[] = []
    let start = 0
    let newline = text.indexOf('\n')
    while (newline !== -1) {
      const piece = text.slice(start, newline)
      const crlf = piece.length > 0 ? piece.endsWith('\r') : this.pending.at(-1)?.endsWith('\r') === true
      // Checked before joining, so an over-long line is never built whole.
      if (this.maxLineBytes !== undefined) this.enforce(this.pendingBytes + utf8Length(piece) - (crlf ? 1 : 0), 0)
      const joined = this.pending.length === 0 ? piece : this.pending.join('') + piece
      const line = crlf ? joined.slice(0, -1) : joined
      this.pending = []
      this.pendingBytes = 0
      lines.push(line)
      start = newline + 1
      newline = text.indexOf('\n', start)
    }
    if (start < text.length) {
      const rest = start === 0 ? text : text.slice(start)
      this.pending.push(rest)
      if (this.maxLineBytes !== undefined) {
        this.pendingBytes += utf8Length(rest)
        // A trailing `\r` may be the first half of a `\r\n` terminator.
        this.enforce(this.pendingBytes, rest.endsWith('\r') ? 1 : 0)
      }
    }
    return lines
  }

  /** The unterminated last line, if any. */
  end(): string | undefined {
    if (this.pending.length === 0) return undefined
    if (this.maxLineBytes !== undefined) this.enforce(this.pendingBytes, 0)
    const line = this.pending.join('')
    this.pending = []
    this.pendingBytes = 0
    return line
  }

  private enforce(bytes: number, slack: number): void {
    if (this.maxLineBytes !== undefined && bytes > this.maxLineBytes + slack) {
      throw new LineTooLongError(this.maxLineBytes)
    }
  }
}

/** UTF-8 byte length of a string without allocating (a lone surrogate counts as U+FFFD, 3 bytes). */
function utf8Length(text: string): number {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) bytes += 1
    else if (code < 0x800) bytes += 2
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4
        i++
      } else bytes += 3
    } else bytes += 3
  }
  return bytes
}
