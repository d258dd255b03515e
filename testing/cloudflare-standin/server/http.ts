/**
 * HTTP plumbing of the control server: JSON bodies in and out, errors as the
 * SDK's `SdkErrorBody` (the DO picks its error class from `code`, not from the
 * status), and SSE frames (`data: <json>\n\n`). Owns no state. Invariant: no
 * answer is ever a 503, which the SDK would retry for 150 s.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { ErrorCode, SdkErrorBody } from './wire.js'

/** A failure that becomes a JSON error answer with `code` and `status`. */
export class StandinError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly status = 500,
    readonly context: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/** ISO time of now, as every answer carries it. */
export const now = (): string => new Date().toISOString()

/** The request body parsed as JSON (an empty body is `{}`). */
export async function readJson<T>(req: IncomingMessage): Promise<T> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  const text = Buffer.concat(chunks).toString('utf8')
  if (text.trim() === '') return {} as T
  try {
    return JSON.parse(text) as T
  } catch {
    throw new StandinError('VALIDATION_FAILED', 'Request body is not valid JSON', 400)
  }
}

/** Answer `body` as JSON. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/** Answer an error as the SDK parses it. */
export function sendError(res: ServerResponse, error: unknown): void {
  const known = error instanceof StandinError ? error : new StandinError('INTERNAL_ERROR', (error as Error)?.message ?? String(error))
  const status = known.status === 503 ? 500 : known.status
  const body: SdkErrorBody = { code: known.code, message: known.message, context: known.context, httpStatus: status, timestamp: now() }
  if (res.headersSent) {
    res.end()
    return
  }
  sendJson(res, status, body)
}

/** Start an SSE answer; the returned function writes one event, and is a no-op once the client left. */
export function startSse(res: ServerResponse): (event: object) => void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
  res.flushHeaders()
  return (event) => {
    if (!res.writableEnded && !res.destroyed) res.write(`data: ${JSON.stringify(event)}\n\n`)
  }
}

/** A required string field, else a 400 `VALIDATION_FAILED`. */
export function required(body: Record<string, unknown>, field: string): string {
  const value = body[field]
  if (typeof value !== 'string' || value === '') throw new StandinError('VALIDATION_FAILED', `${field} is required`, 400, { field })
  return value
}
