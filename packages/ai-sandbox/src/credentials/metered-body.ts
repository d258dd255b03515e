/**
 * The upstream answer on its way to the agent: every chunk is passed on as
 * it arrives, unchanged, and a copy is read for usage (server-sent events
 * with eventsource-parser, a JSON body once it has all arrived).
 * Invariant: metering never holds back, changes or ends the agent's stream;
 * the last reading is reported before the agent sees the stream end.
 */
import { createParser } from 'eventsource-parser'
import type { ModelWire } from './model-proxy-options.js'
import { usageFromBody, usageFromEvent, type UsageReading } from './wire-usage.js'

/** What reads the copy of one body. */
interface UsageSink {
  push: (chunk: Uint8Array) => void
  end: () => void
}

/**
 * The body to send the agent: `response.body` piped through a pass-through
 * that reports each usage reading it finds, as the chunk holding it passes.
 *
 * @param response - The upstream response.
 * @param wire - The upstream's API, which says where usage is.
 * @param report - Called with each reading, in order.
 * @returns The metered body; `response.body` itself when its content type is
 *   neither `text/event-stream` nor JSON (nothing to read), `null` when there is no body.
 */
export function meteredBody(response: Response, wire: ModelWire, report: (reading: UsageReading) => void): ReadableStream<Uint8Array> | null {
  const sink = sinkFor(response.headers.get('content-type'), wire, report)
  if (response.body === null || sink === undefined) return response.body
  return response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk)
        sink.push(chunk)
      },
      flush: () => sink.end(),
    }),
  )
}

function sinkFor(contentType: string | null, wire: ModelWire, report: (reading: UsageReading) => void): UsageSink | undefined {
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
  const decoder = new TextDecoder()
  if (type === 'text/event-stream') {
    const parser = createParser({
      onEvent: (event) => {
        const reading = usageFromEvent(wire, event.data)
        if (reading) report(reading)
      },
    })
    return {
      push: (chunk) => parser.feed(decoder.decode(chunk, { stream: true })),
      end: () => {
        parser.feed(decoder.decode())
        parser.reset({ consume: true })
      },
    }
  }
  if (type === 'application/json' || type.endsWith('+json')) {
    const parts: string[] = []
    return {
      push: (chunk) => void parts.push(decoder.decode(chunk, { stream: true })),
      end: () => {
        parts.push(decoder.decode())
        const reading = usageFromBody(wire, parts.join(''))
        if (reading) report(reading)
      },
    }
  }
  return undefined
}
