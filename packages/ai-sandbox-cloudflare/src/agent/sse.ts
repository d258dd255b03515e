/**
 * The tail route's wire: a run's events as Server-Sent Events, each with its
 * `seq` as the SSE `id` (so a reconnecting `EventSource` sends it back as
 * `Last-Event-ID`) and its chunk as JSON `data`, from an exclusive cursor to
 * the end of the log. A comment line every `heartbeatMs` keeps idle
 * connections open through proxies. The stream ends when the log ends, and
 * stops reading when the client goes away.
 */
import type { RunEventLog } from './vocabulary.js'

/** ms between two SSE comment lines while no event comes. */
export const SSE_HEARTBEAT_MS = 15_000

/**
 * The cursor a tail request names: its `Last-Event-ID` header, else its
 * `?after=` parameter, else `-1` (from the start).
 * @returns The cursor, or `undefined` when one is given but is not a whole number ≥ -1.
 */
export function cursorOf(request: Request): number | undefined {
  const raw = request.headers.get('last-event-id') ?? new URL(request.url).searchParams.get('after') ?? '-1'
  if (!/^(-1|0|[1-9][0-9]{0,15})$/.test(raw.trim())) return undefined
  return Number(raw.trim())
}

/** An SSE response of `runId`'s events after `after`, until the log ends or the request is aborted. */
export function eventStreamResponse(log: RunEventLog, runId: string, after: number, signal: AbortSignal, heartbeatMs = SSE_HEARTBEAT_MS): Response {
  const encoder = new TextEncoder()
  const stop = new AbortController()
  const onAbort = (): void => stop.abort()
  signal.addEventListener('abort', onAbort, { once: true })
  let heartbeat: ReturnType<typeof setInterval> | undefined
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      heartbeat = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(': keep-alive\n\n'))
        } catch {
          stop.abort()
        }
      }, heartbeatMs)
      try {
        for await (const event of log.read(runId, { after, signal: stop.signal })) {
          controller.enqueue(encoder.encode(`id: ${event.seq}\ndata: ${JSON.stringify(event.chunk)}\n\n`))
        }
        controller.close()
      } catch (error) {
        controller.error(error)
      } finally {
        clearInterval(heartbeat)
        signal.removeEventListener('abort', onAbort)
      }
    },
    cancel() {
      clearInterval(heartbeat)
      stop.abort()
    },
  })
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-run-id': runId } })
}
