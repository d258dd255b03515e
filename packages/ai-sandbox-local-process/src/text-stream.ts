/**
 * A buffered, single-producer text stream for spawned-process output: bytes
 * in, UTF-8 chunks out, buffered until read; above
 * {@link OUTPUT_HIGH_WATER_MARK} unread bytes it pauses its pipe. Invariant:
 * chunks come out in input order; the iterator ends only after `end()` and
 * once the buffer is empty. Design notes: docs/design/local-process.md
 */

/**
 * Unread bytes of one output stream above which its pipe is paused, 1 MiB.
 * Reading resumes it once the buffer is at or below the mark again.
 */
export const OUTPUT_HIGH_WATER_MARK = 1024 * 1024

/** The part of a Node readable the stream throttles. */
export interface PausableSource {
  on(event: 'data', listener: (chunk: Buffer) => void): unknown
  pause(): unknown
  resume(): unknown
}

/** Decoded output of one pipe, readable with `for await`. */
export class TextStream implements AsyncIterable<string> {
  private readonly decoder = new TextDecoder('utf-8')
  private readonly queue: { text: string; bytes: number }[] = []
  private unreadBytes = 0
  private ended = false
  private waiters: (() => void)[] = []
  private source: PausableSource | undefined
  private paused = false

  /** @param highWaterMark - Unread bytes above which the source is paused. Default {@link OUTPUT_HIGH_WATER_MARK}. */
  constructor(private readonly highWaterMark = OUTPUT_HIGH_WATER_MARK) {}

  /** Read `source` into this stream, pausing it while more than the high-water mark is unread. */
  readFrom(source: PausableSource): void {
    this.source = source
    source.on('data', (chunk) => this.push(chunk))
  }

  /** Decode and buffer a chunk of bytes. Ignored after {@link end}. */
  push(bytes: Uint8Array): void {
    if (this.ended) return
    this.enqueue(this.decoder.decode(bytes, { stream: true }), bytes.length)
    this.flow()
  }

  /** Flush the decoder (an incomplete trailing character becomes U+FFFD) and close the stream. */
  end(): void {
    if (this.ended) return
    this.enqueue(this.decoder.decode(), 0)
    this.ended = true
    this.notify()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for (;;) {
      const entry = this.queue.shift()
      if (entry !== undefined) {
        this.unreadBytes -= entry.bytes
        this.flow()
        yield entry.text
        continue
      }
      if (this.ended) return
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
      })
    }
  }

  /** Pause the source above the mark, resume it at or below. */
  private flow(): void {
    const full = this.unreadBytes > this.highWaterMark
    if (!this.source || full === this.paused) return
    this.paused = full
    if (full) this.source.pause()
    else this.source.resume()
  }

  private enqueue(text: string, bytes: number): void {
    if (text.length === 0) {
      // Bytes of an unfinished character: counted with the text they complete.
      if (bytes > 0) this.pendingBytes += bytes
      return
    }
    const counted = bytes + this.pendingBytes
    this.pendingBytes = 0
    this.queue.push({ text, bytes: counted })
    this.unreadBytes += counted
    this.notify()
  }

  private pendingBytes = 0

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake()
  }
}
