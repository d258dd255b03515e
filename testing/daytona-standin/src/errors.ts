/**
 * Errors as Daytona's API and toolbox daemon send them: a JSON body with
 * `statusCode` and `message` (the SDK picks its error class from the HTTP
 * status), plus `code` and `source` for the daemon's coded errors.
 */
import type { Context } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'

/** An error a route throws; the app turns it into the JSON body below. */
export class StandinError extends Error {
  constructor(
    readonly statusCode: ContentfulStatusCode,
    message: string,
    readonly code?: string,
  ) {
    super(message)
  }
}

/** A daemon error (`source: DAYTONA_DAEMON`), which the SDK narrows by `code`. */
export class DaemonError extends StandinError {}

/** The response for any error a route threw (unexpected ones are 500s naming their message). */
export function errorResponse(error: unknown, c: Context): Response {
  const known = error instanceof StandinError ? error : undefined
  const statusCode = known?.statusCode ?? 500
  const body = {
    statusCode,
    message: error instanceof Error ? error.message : String(error),
    ...(known?.code !== undefined ? { code: known.code } : {}),
    ...(error instanceof DaemonError ? { source: 'DAYTONA_DAEMON' } : {}),
    path: c.req.path,
    timestamp: new Date().toISOString(),
  }
  return c.json(body, statusCode)
}
