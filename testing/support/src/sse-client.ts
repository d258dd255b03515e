/**
 * The one Server-Sent Events reader of the tests and benchmarks: messages
 * parsed off a response body by `eventsource-parser`, as a browser's
 * `EventSource` parses them (`data:` with or without the space, CRLF or LF,
 * comments skipped), each with its `id:` (the resume offset a reconnect sends
 * as `Last-Event-ID`); and on top the client half of a durable run, each
 * chunk restored as `@tanstack/ai-client` restores it, core's `run.accepted` marker told apart.
 */
import { RUN_ACCEPTED_EVENT, type StreamChunk } from '@tanstack/ai'
import { restoreInboundChunk } from '@tanstack/ai/client'
import { createParser } from 'eventsource-parser'

/** One SSE message: its `id:` and `event:` when it has them, and its `data:` lines joined with `\n`. */
export interface SseMessage {
  id?: string | undefined
  event?: string | undefined
  data: string
}

/**
 * The messages of an SSE body, in order, as they complete; an event with no
 * `data:` line is not one. Ends with the body; a body that breaks off (its
 * server was killed) throws from the iteration. Leaving the iteration early
 * cancels the body, as a client that hangs up does.
 */
export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
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
    await reader.cancel().catch(() => undefined)
  }
}

/** One event of a durable run: its `id:` when the stream is durable, and its chunk. */
export interface SseEvent {
  id?: string
  chunk: StreamChunk
}

/**
 * Read a run's events off `body` until `stop(event)` returns true (then the
 * client hangs up, as a closed tab does) or the body ends. A body that breaks
 * off (its server was killed) ends the read with what arrived.
 *
 * @param body - A response body in SSE format, one chunk's JSON per message.
 * @param stop - Called with each event after it was collected.
 * @returns The events, in order.
 */
export async function readSseEvents(body: ReadableStream<Uint8Array>, stop: (event: SseEvent, events: readonly SseEvent[]) => boolean = () => false): Promise<SseEvent[]> {
  const messages = sseMessages(body)
  const events: SseEvent[] = []
  for (;;) {
    let next: IteratorResult<SseMessage>
    try {
      next = await messages.next()
    } catch {
      return events // the connection broke (a killed server)
    }
    if (next.done) return events
    const { id, data } = next.value
    const event: SseEvent = { ...(id ? { id } : {}), chunk: restoreInboundChunk(JSON.parse(data) as StreamChunk) as StreamChunk }
    events.push(event)
    if (stop(event, events)) {
      await messages.return(undefined)
      return events
    }
  }
}

/** Whether `chunk` is core's `run.accepted` marker (appended before the run's first real chunk; not part of the transcript). */
export function isRunAcceptedMarker(chunk: StreamChunk): boolean {
  return chunk.type === 'CUSTOM' && (chunk as { name?: string }).name === RUN_ACCEPTED_EVENT
}

/** The transcript a client assembled from several connections: their chunks in order, without the marker. */
export function transcriptOf(...connections: readonly (readonly SseEvent[])[]): StreamChunk[] {
  return connections.flat().map((e) => e.chunk).filter((c) => !isRunAcceptedMarker(c))
}
