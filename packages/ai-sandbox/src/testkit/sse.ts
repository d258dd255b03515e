/**
 * The one Server-Sent Events reader of the conformance kits (and of core's
 * tests): messages parsed by `eventsource-parser` as a browser's `EventSource`
 * parses them (`data:` with or without the space, CRLF or LF, comments
 * skipped), each with its `id:` (the offset a reconnect sends as
 * `Last-Event-ID`). The kits only read SSE here; core's own helpers write it.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser'

/** One SSE message: its `id:` and `event:` when it has them, and its `data:` lines joined with `\n`. */
export type SseMessage = EventSourceMessage

/**
 * The messages of a whole SSE text, in order; an event with no `data:` line
 * is not one, nor is a last event the text does not end.
 *
 * @param text - An SSE body read to its end.
 */
export function parseSse(text: string): SseMessage[] {
  const messages: SseMessage[] = []
  createParser({ onEvent: (message) => messages.push(message) }).feed(text)
  return messages
}

/**
 * The messages of an SSE body, in order, as they complete. Ends with the
 * body; a body that breaks off throws from the iteration. Leaving the
 * iteration early (`break`, `return()`) cancels the body, as a client that
 * hangs up does; a cancel that fails (the producer's cleanup threw) throws
 * from there.
 *
 * @param body - A response body in SSE format.
 */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage, void, undefined> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const parsed: SseMessage[] = []
  const parser = createParser({ onEvent: (message) => parsed.push(message) })
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      parser.feed(decoder.decode(value, { stream: true }))
      yield* parsed.splice(0)
    }
  } finally {
    await reader.cancel() // after the end a no-op; after a break-off it rethrows that failure
  }
}
