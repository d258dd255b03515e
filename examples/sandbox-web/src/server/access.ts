/**
 * Who may talk to the server, as hono middleware. The app listens on
 * 127.0.0.1 only, and on top of that:
 *
 * - `checkHost`: the `Host` header must name this server (`127.0.0.1:<port>`
 *   or `localhost:<port>`), so a page whose own domain was re-pointed at
 *   127.0.0.1 (DNS rebinding) is refused;
 * - `checkBrowserWrite`: a request that changes state (any method but GET,
 *   HEAD and OPTIONS) is refused when it carries a foreign `Origin`, and when
 *   its body is not `application/json`; a cross-site `<form>` or a
 *   `text/plain` fetch (the kinds a browser sends without a preflight) fails
 *   both;
 * - `requireToken`: every API request carries the launch's access token,
 *   `Authorization: Bearer <token>`, compared in constant time.
 *
 * Owns no route and no state beyond the token. Invariant: every refusal is a
 * short JSON `{ error }` that says what to do; none echoes the token.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { MiddlewareHandler } from 'hono'

/** What the middleware leaves for the routes: `client`, the key of the credential that was accepted. */
export interface AppEnv {
  Variables: { client: string }
}

/** Methods that only read. Everything else changes state and must come from this app's own page, as JSON. */
const READ_ONLY = new Set(['GET', 'HEAD', 'OPTIONS'])

/** The `Host` values this server answers to on `port` (a browser leaves `:80` out). */
export function ownHosts(port: number): Set<string> {
  const hosts = [`127.0.0.1:${port}`, `localhost:${port}`]
  if (port === 80) hosts.push('127.0.0.1', 'localhost')
  return new Set(hosts)
}

/** The origins of this app's own page on `port`: the URL the server prints, and the same on `localhost`. */
export function ownOrigins(port: number): Set<string> {
  return new Set([...ownHosts(port)].map((host) => `http://${host}`))
}

/**
 * Refuse (403) a request whose `Host` header is not this server's, whatever its path: a DNS-rebinding page sends
 * its own domain there.
 * @param port - The port the server listens on (read per request: with `PORT=0` it is known only once listening).
 */
export function checkHost(port: () => number): MiddlewareHandler {
  return async (c, next) => {
    const host = c.req.header('host')?.toLowerCase()
    if (host === undefined || !ownHosts(port()).has(host)) {
      return c.json({ error: `this server answers only to Host 127.0.0.1:${port()} or localhost:${port()}; open http://127.0.0.1:${port()}/ instead` }, 403)
    }
    await next()
  }
}

/**
 * Refuse a state-changing request from another site: 403 when its `Origin` is present and not this app's, 415 when
 * its body is not `application/json` (a cross-site form or `text/plain` fetch needs no preflight; a JSON one does,
 * and this server answers no preflight).
 * @param port - The port the server listens on.
 */
export function checkBrowserWrite(port: () => number): MiddlewareHandler {
  return async (c, next) => {
    if (READ_ONLY.has(c.req.method)) return next()
    const origin = c.req.header('origin')
    if (origin !== undefined && !ownOrigins(port()).has(origin.toLowerCase())) {
      return c.json({ error: `requests that change state are accepted only from this app's own page (http://127.0.0.1:${port()}), not from ${origin}` }, 403)
    }
    const type = c.req.header('content-type')?.split(';')[0]?.trim().toLowerCase()
    if (type !== 'application/json') {
      return c.json({ error: `send a JSON body with Content-Type: application/json (got ${type === undefined || type === '' ? 'none' : type})` }, 415)
    }
    await next()
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest()

/** The key the run caps count a credential under: not the token itself, so it can be logged or shown. */
export function clientKey(token: string): string {
  return `token-${digest(token).toString('hex').slice(0, 12)}`
}

/**
 * Whether `sent` is `expected`, in time that does not depend on where they differ: both are hashed first, so
 * `timingSafeEqual` compares two buffers of one length, and a wrong guess's length tells nothing either.
 */
export function sameToken(sent: string, expected: string): boolean {
  return timingSafeEqual(digest(sent), digest(expected))
}

/**
 * Refuse (401) an API request without the launch's token in `Authorization: Bearer <token>`; on success sets
 * `client` (see {@link clientKey}) for the run caps.
 * @param token - The launch's token (`config.accessToken`).
 * @param port - The port the server listens on, for the message.
 */
export function requireToken(token: string, port: () => number): MiddlewareHandler<AppEnv> {
  const client = clientKey(token)
  return async (c, next) => {
    const sent = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(c.req.header('authorization') ?? '')?.[1]
    if (sent === undefined || !sameToken(sent, token)) {
      c.header('WWW-Authenticate', 'Bearer realm="sandbox-web"')
      return c.json({ error: `${sent === undefined ? 'no' : 'a wrong'} access token: open the address the server printed when it started (http://127.0.0.1:${port()}/?token=…), or send Authorization: Bearer <token>` }, 401)
    }
    c.set('client', client)
    await next()
  }
}
