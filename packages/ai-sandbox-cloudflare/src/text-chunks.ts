/**
 * A spawned process's stdout or stderr as the contract wants it: an async
 * iterable of UTF-8 text chunks (a character is never split across chunks),
 * buffered until read, ending or failing once. Web APIs only, so it runs in
 * workerd without Node streams.
 */

/** One output stream of a spawned process. */
export class TextChunks implements AsyncIterable<string> {
  private readonly decoder = new TextDecoder()
  private readonly queue: string[] = []
  private ended = false
  private failure: Error | undefined
  private wake: (() => void) | undefined

  /** Add bytes as they arrive. */
  push(bytes: Uint8Array): void {
    if (this.ended) return
    const text = this.decoder.decode(bytes, { stream: true })
    if (text !== '') this.queue.push(text)
    this.notify()
  }

  /** No more bytes: flush the decoder and end. */
  end(): void {
    if (this.ended) return
    const rest = this.decoder.decode()
    if (rest !== '') this.queue.push(rest)
    this.ended = true
    this.notify()
  }

  /** End with an error (the reader's loop throws it after the buffered text). */
  fail(error: Error): void {
    if (this.ended) return
    this.failure = error
    this.ended = true
    this.notify()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<string> {
    for (;;) {
      const next = this.queue.shift()
      if (next !== undefined) {
        yield next
        continue
      }
      if (this.ended) {
        if (this.failure) throw this.failure
        return
      }
      await new Promise<void>((resolve) => (this.wake = resolve))
    }
  }

  private notify(): void {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }
}
