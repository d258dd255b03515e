/**
 * A buffered, single-producer text stream for spawned-process output: bytes
 * in, UTF-8 chunks out, buffered until read; {@link throttle} pauses the exec
 * connection above {@link OUTPUT_HIGH_WATER_MARK}. Invariant: chunks come out
 * in input order, and iteration ends only after `end()` with an empty buffer.
 * Design notes: docs/design/docker.md
 */

/**
 * Unread bytes of one output stream above which the exec's connection is
 * paused, 1 MiB. Reading resumes it once the buffer is at or below the mark.
 */
export const OUTPUT_HIGH_WATER_MARK = 1024 * 1024

/** Decoded output of one stream, readable with `for await`. */
export class TextStream implements AsyncIterable<string> {
  private readonly decoder = new TextDecoder('utf-8')
  private readonly queue: { text: string; bytes: number }[] = []
  private ended = false
  private waiters: (() => void)[] = []
  /** Bytes pushed but not yet read (an unfinished character's bytes included). */
  private unread = 0
  /** The part of {@link unread} already queued as text. */
  private queuedBytes = 0
  /** Called when the buffer or the waiting state changed (see {@link throttle}). */
  onChange: (() => void) | undefined

  /** @param highWaterMark - Unread bytes above which the stream counts as {@link full}. Default {@link OUTPUT_HIGH_WATER_MARK}. */
  constructor(private readonly highWaterMark = OUTPUT_HIGH_WATER_MARK) {}

  /** True while more than the high-water mark is unread. */
  get full(): boolean {
    return this.unread > this.highWaterMark
  }

  /** True while a reader waits on an empty buffer (it needs more bytes to make progress). */
  get starving(): boolean {
    return this.waiters.length > 0 && !this.ended
  }

  /** Decode and buffer a chunk of bytes. Ignored after {@link end}. */
  push(bytes: Uint8Array): void {
    if (this.ended) return
    this.unread += bytes.length
    this.enqueue(this.decoder.decode(bytes, { stream: true }))
    this.onChange?.()
  }

  /** Flush the decoder (an incomplete trailing character becomes U+FFFD) and close the stream. */
  end(): void {
    if (this.ended) return
    this.enqueue(this.decoder.decode())
    this.ended = true
    this.notify()
    this.onChange?.()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for (;;) {
      const entry = this.queue.shift()
      if (entry !== undefined) {
        this.unread -= entry.bytes
        this.queuedBytes -= entry.bytes
        this.onChange?.()
        yield entry.text
        continue
      }
      if (this.ended) return
      const wait = new Promise<void>((resolve) => {
        this.waiters.push(resolve)
      })
      this.onChange?.()
      await wait
    }
  }

  private enqueue(text: string): void {
    if (text.length === 0) return
    // Everything unread and not yet queued belongs to this text (the bytes of a split character included).
    const bytes = this.unread - this.queuedBytes
    this.queuedBytes += bytes
    this.queue.push({ text, bytes })
    this.notify()
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake()
  }
}

/**
 * Pause `source` while any of `streams` is {@link TextStream.full} and none of
 * them has a reader waiting for bytes; resume it otherwise. Docker sends stdout
 * and stderr over one connection, so pausing it stops both: a reader parked on
 * an empty stream keeps the connection flowing (the other stream then buffers
 * past the mark) so that reading only one of the two never deadlocks.
 *
 * @param streams - The streams fed by `source`.
 * @param source - The connection (`pause()`/`resume()` of a Node stream).
 */
export function throttle(streams: readonly TextStream[], source: { pause: () => unknown; resume: () => unknown }): void {
  let paused = false
  const update = () => {
    const pause = streams.some((stream) => stream.full) && !streams.some((stream) => stream.starving)
    if (pause === paused) return
    paused = pause
    if (pause) source.pause()
    else source.resume()
  }
  for (const stream of streams) stream.onChange = update
  update()
}
