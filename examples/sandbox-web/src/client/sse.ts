/**
 * Reading a run's Server-Sent Events over `fetch` (EventSource cannot POST or
 * set `Last-Event-ID` on its first request), parsed by `eventsource-parser`
 * as EventSource would. Yields each event's `id` (the run log's offset) and
 * parsed `data`. Owns no retry: the caller decides when to reattach, with the
 * last id it kept. Requests go through `apiFetch`, which adds the access token.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { apiFetch, UnauthorizedError } from './auth.js'

/** One chunk of a run as it arrives on the wire. */
export interface WireChunk {
  type: string
  [field: string]: unknown
}

/** One SSE event: the log offset (absent on an error the server made up) and the chunk. */
export interface WireEvent {
  id: string | undefined
  chunk: WireChunk
}

/**
 * Read an SSE response body to its end.
 * @throws UnauthorizedError on a 401; an Error when the response is not a 2xx otherwise (with the server's message) or the connection fails.
 */
export async function* readEvents(response: Response): AsyncGenerator<WireEvent> {
  if (response.status === 401) throw new UnauthorizedError()
  if (!response.ok || !response.body) throw new Error(`${response.status} ${await response.text().catch(() => '')}`)
  const reader = response.body.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      yield { id: value.id, chunk: JSON.parse(value.data) as WireChunk }
    }
  } finally {
    reader.releaseLock()
  }
}

/** POST /api/run: start a run of the thread; the response streams it. */
export function startRun(runId: string, threadId: string, prompt: string, signal?: AbortSignal): Promise<Response> {
  return apiFetch(`/api/run?runId=${encodeURIComponent(runId)}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ threadId, prompt }), signal })
}

/** GET /api/run: replay the run after `lastEventId` (from the start when there is none), then follow it live. */
export function attachRun(runId: string, lastEventId: string | undefined, signal?: AbortSignal): Promise<Response> {
  const url = `/api/run?runId=${encodeURIComponent(runId)}${lastEventId === undefined ? '&offset=-1' : ''}`
  return apiFetch(url, { headers: lastEventId === undefined ? {} : { 'Last-Event-ID': lastEventId }, signal })
}
