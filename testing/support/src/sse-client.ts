/**
 * The client half of a durable SSE run, as a browser's `EventSource` or
 * `@tanstack/ai-client` sees it: events parsed off a response body with
 * their `id:` (the resume offset a reconnect sends as `Last-Event-ID`), each
 * chunk restored as the client restores it, and core's `run.accepted` marker
 * told apart. Shared by the takeover suites and the soak benchmark.
 */
import { RUN_ACCEPTED_EVENT, type StreamChunk } from '@tanstack/ai'
import { restoreInboundChunk } from '@tanstack/ai/client'

/** One SSE event: its `id:` when the stream is durable, and its chunk. */
export interface SseEvent {
  id?: string
  chunk: StreamChunk
}

/**
 * Read SSE events off `body` until `stop(event)` returns true (then the
 * client hangs up, as a closed tab does) or the body ends. A body that breaks
 * off (its server was killed) ends the read with what arrived.
 *
 * @param body - A response body in SSE format.
 * @param stop - Called with each event after it was collected.
 * @returns The events, in order.
 */
export async function readSseEvents(body: ReadableStream<Uint8Array>, stop: (event: SseEvent, events: readonly SseEvent[]) => boolean = () => false): Promise<SseEvent[]> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const events: SseEvent[] = []
  let buffer = ''
  for (;;) {
    let next: ReadableStreamReadResult<Uint8Array>
    try {
      next = await reader.read()
    } catch {
      return events // the connection broke (a killed server)
    }
    if (next.done) return events
    buffer += decoder.decode(next.value, { stream: true })
    let cut: number
    while ((cut = buffer.indexOf('\n\n')) !== -1) {
      const raw = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      const lines = raw.split('\n')
      const data = lines.find((l) => l.startsWith('data: '))
      if (!data) continue
      const id = lines.find((l) => l.startsWith('id: '))?.slice(4)
      const event: SseEvent = { ...(id ? { id } : {}), chunk: restoreInboundChunk(JSON.parse(data.slice(6)) as StreamChunk) as StreamChunk }
      events.push(event)
      if (stop(event, events)) {
        await reader.cancel().catch(() => undefined)
        return events
      }
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
