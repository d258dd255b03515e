/**
 * A buffered, single-producer text stream for spawned-process output: bytes in,
 * UTF-8 text chunks out through a streaming `TextDecoder`, so a character split
 * across two frames is never mangled. It buffers until read, so a consumer that
 * starts iterating late loses nothing (the cost: unread output stays in memory).
 * Invariant: chunks come out in the order bytes went in, and iteration ends only
 * after `end()` and once the buffer is empty.
 */

/** Decoded output of one stream, readable with `for await`. */
export class TextStream implements AsyncIterable<string> {
  private readonly decoder = new TextDecoder('utf-8')
  private readonly queue: string[] = []
  private ended = false
  private waiters: (() => void)[] = []

  /** Decode and buffer a chunk of bytes. Ignored after {@link end}. */
  push(bytes: Uint8Array): void {
    if (this.ended) return
    this.enqueue(this.decoder.decode(bytes, { stream: true }))
  }

  /** Flush the decoder (an incomplete trailing character becomes U+FFFD) and close the stream. */
  end(): void {
    if (this.ended) return
    this.enqueue(this.decoder.decode())
    this.ended = true
    this.notify()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for (;;) {
      const chunk = this.queue.shift()
      if (chunk !== undefined) {
        yield chunk
        continue
      }
      if (this.ended) return
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve)
      })
    }
  }

  private enqueue(text: string): void {
    if (text.length === 0) return
    this.queue.push(text)
    this.notify()
  }

  private notify(): void {
    for (const wake of this.waiters.splice(0)) wake()
  }
}
