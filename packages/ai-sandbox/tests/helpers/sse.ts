/**
 * Core's tests read SSE as a client does, through the testkit's reader
 * (`src/testkit/sse.ts`, on `eventsource-parser`): every chunk of a body, or
 * a connection a test reads up to a chunk and then drains or hangs up. Each
 * chunk is restored as `@tanstack/ai-client` restores it. (`@testing/support`
 * has the same reader for the other suites; core's tests cannot use it: it
 * depends on core.)
 */
import type { StreamChunk } from '@tanstack/ai'
import { restoreInboundChunk } from '@tanstack/ai/client'
import { sseMessages } from '../../src/testkit/sse.js'

/** The chunk of one message's `data:`, restored as the client restores it. */
const chunkOf = (data: string): StreamChunk => restoreInboundChunk(JSON.parse(data) as StreamChunk) as StreamChunk

/** Every chunk of an SSE body, in order; resolves when the body ends. */
export async function sseChunks(body: ReadableStream<Uint8Array>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = []
  for await (const { data } of sseMessages(body)) chunks.push(chunkOf(data))
  return chunks
}

/** A client's connection to an SSE body, read one message at a time. */
export interface SseConnection {
  /** Read on to the first chunk `match` holds for and return it; throws if the body ends first. */
  until: (match: (chunk: StreamChunk) => boolean) => Promise<StreamChunk>
  /** Read on to the end of the body. */
  drain: () => Promise<void>
  /** Hang up (cancel the body), as a closed tab does; a cancel that fails throws. */
  hangUp: () => Promise<void>
}

/** Open a connection to `body`; nothing is read until a method is called. */
export function sseConnection(body: ReadableStream<Uint8Array>): SseConnection {
  const messages = sseMessages(body)
  let reading = false // a generator that never started runs no `finally`, so hanging up before any read cancels the body itself
  const read = (): ReturnType<typeof messages.next> => ((reading = true), messages.next())
  return {
    async until(match) {
      for (;;) {
        const next = await read()
        if (next.done) throw new Error('the SSE body ended before the chunk the test waits for')
        const chunk = chunkOf(next.value.data)
        if (match(chunk)) return chunk
      }
    },
    async drain() {
      while (!(await read()).done);
    },
    async hangUp() {
      await (reading ? messages.return(undefined) : body.cancel())
    },
  }
}
