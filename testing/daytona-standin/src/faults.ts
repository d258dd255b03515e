/**
 * Failure switches a test flips on a running stand-in: answer the next
 * matching requests with an error status (429 with `Retry-After`, 401, 500…),
 * refuse a target on create, and drop every connection while paused, so the
 * SDK meets each failure the way Daytona's cloud would send it.
 */
import type { Context, Next } from 'hono'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { errorResponse, StandinError } from './errors.js'

/** A request line to fail: method and path, where a `{name}` segment matches any one segment (`GET /sandbox/{id}`, `POST /toolbox/{id}/process/execute`). */
export type FaultRoute = `${'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'} /${string}`

/** What {@link Faults.failNext} answers, and how often. */
export interface FailNextOptions {
  /** The requests to fail. */
  route: FaultRoute
  /** The HTTP status sent (the SDK picks its error class from it). */
  status: ContentfulStatusCode
  /** Sent as the `Retry-After` header (seconds), as Daytona does with a 429. */
  retryAfterSeconds?: number
  /** The body's `message`. Default names the status and says it was injected. */
  message?: string
  /** How many matching requests fail before the route answers normally again. Default 1. */
  times?: number
}

/** Whether `path` is an instance of the route's path pattern. */
function matches(pattern: string, path: string): boolean {
  const want = pattern.split('/')
  const got = path.replace(/\/+$/, '').split('/')
  return want.length === got.length && want.every((segment, i) => (/^\{[^}]+\}$/.test(segment) ? got[i] !== '' : segment === got[i]))
}

/** The failure switches of one stand-in and the middleware that applies the HTTP ones. */
export class Faults {
  private readonly pending: (FailNextOptions & { left: number })[] = []
  /** Targets a create is refused for with a 400 naming them. */
  readonly rejectedTargets = new Set<string>()

  /** Answer the next `times` requests matching `route` with `status`. */
  failNext(options: FailNextOptions): void {
    this.pending.push({ ...options, left: options.times ?? 1 })
  }

  /** Hono middleware: the injected error for a matching request, else the route. */
  readonly middleware = async (c: Context, next: Next): Promise<Response | void> => {
    const index = this.pending.findIndex((f) => {
      const [method, path] = f.route.split(' ', 2) as [string, string]
      return method === c.req.method && matches(path, c.req.path)
    })
    if (index === -1) return next()
    const fault = this.pending[index]!
    if (--fault.left <= 0) this.pending.splice(index, 1)
    if (fault.retryAfterSeconds !== undefined) c.header('Retry-After', String(fault.retryAfterSeconds))
    return errorResponse(new StandinError(fault.status, fault.message ?? `the stand-in was told to answer ${fault.route} with ${fault.status}`), c)
  }
}
