/**
 * Preview links: the routes that hand them out (a standard link and its
 * token, signed links with an expiry, and their early expiry) and the proxy
 * that serves them from the stand-in's own HTTP server under
 * `/preview/{port}-{sandboxId}/…` (token in `x-daytona-preview-token`, unless
 * the sandbox is public) and `/preview/{port}-{signedToken}/…` (no header).
 * The proxy forwards plain HTTP (method, path, query, headers, streamed body
 * both ways) to the container's address on Docker's default bridge.
 */
import { randomBytes } from 'node:crypto'
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http'
import { request } from 'node:http'
import type { Hono } from 'hono'
import type { PortPreviewUrl, SignedPortPreviewUrl } from '@daytona/api-client'
import type { SandboxEngine } from './engine.js'
import { StandinError } from './errors.js'
import type { SandboxRecord, SandboxStore } from './control.js'

/** Where the proxy is mounted on the stand-in's server. */
export const PREVIEW_PREFIX = '/preview/'

/** The header a standard preview link of a private sandbox needs. */
export const PREVIEW_TOKEN_HEADER = 'x-daytona-preview-token'

/** Default and bounds of a signed link's life, in seconds (Daytona: 60 by default, 1 s to 24 h). */
const SIGNED_DEFAULT_S = 60
const SIGNED_MAX_S = 24 * 60 * 60

/** Headers that belong to one connection, never forwarded either way. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']

/** One signed link: the port of the sandbox it opens, until when. */
interface SignedLink {
  sandboxId: string
  port: number
  /** Epoch ms; 0 once expired early. */
  expiresAt: number
}

/** The signed links handed out, by token (expired ones are kept, so the proxy can say they expired). */
export class SignedLinks {
  readonly byToken = new Map<string, SignedLink>()
}

/** A port from a path segment, or a 400 as Daytona answers (`Invalid port`). */
function portOf(value: string | undefined): number {
  const port = Number(value)
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new StandinError(400, `Invalid port ${value}: a port is an integer from 1 to 65535`)
  return port
}

/** A signed link token: 16 lowercase hex digits (never a UUID, so it cannot be taken for a sandbox id). */
const newSignedToken = (): string => randomBytes(8).toString('hex')

/** Register the preview-link routes on `app`; `base` is the stand-in's URL, which the links start with. */
export function previewRoutes(app: Hono, store: SandboxStore, links: SignedLinks, base: () => string): void {
  app.get('/sandbox/:idOrName/ports/:port/preview-url', (c) => {
    const record = store.find(c.req.param('idOrName'))
    const port = portOf(c.req.param('port'))
    const body: PortPreviewUrl = { sandboxId: record.dto.id, url: `${base()}${PREVIEW_PREFIX}${port}-${record.dto.id}`, token: record.previewToken }
    return c.json(body)
  })

  app.get('/sandbox/:idOrName/ports/:port/signed-preview-url', (c) => {
    const record = store.find(c.req.param('idOrName'))
    const port = portOf(c.req.param('port'))
    const raw = c.req.query('expiresInSeconds')
    const seconds = raw === undefined ? SIGNED_DEFAULT_S : Number(raw)
    if (!Number.isInteger(seconds) || seconds < 1 || seconds > SIGNED_MAX_S) throw new StandinError(400, `expiresInSeconds must be an integer from 1 to ${SIGNED_MAX_S}, got ${raw}`)
    const token = newSignedToken()
    links.byToken.set(token, { sandboxId: record.dto.id, port, expiresAt: Date.now() + seconds * 1000 })
    const body: SignedPortPreviewUrl = { sandboxId: record.dto.id, port, token, url: `${base()}${PREVIEW_PREFIX}${port}-${token}` }
    return c.json(body)
  })

  // An unknown token is taken as one that already expired (nothing to do); a token of another sandbox or port is a 404.
  app.post('/sandbox/:idOrName/ports/:port/signed-preview-url/:token/expire', (c) => {
    const record = store.find(c.req.param('idOrName'))
    const port = portOf(c.req.param('port'))
    const link = links.byToken.get(c.req.param('token'))
    if (link && (link.sandboxId !== record.dto.id || link.port !== port)) throw new StandinError(404, `no signed preview URL with this token for port ${port} of sandbox ${record.dto.id}`)
    if (link) link.expiresAt = 0
    return c.body(null, 200)
  })
}

/** What the proxy needs from the server. */
export interface PreviewProxyOptions {
  engine: SandboxEngine
  store: SandboxStore
  links: SignedLinks
  /** Told the status of every request the proxy answered. */
  onAnswer?: (method: string, path: string, status: number) => void
}

/** The headers of `from` without the hop-by-hop ones (and those the `Connection` header names). */
function endToEnd(from: IncomingHttpHeaders): IncomingHttpHeaders {
  const named = String(from.connection ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
  const headers: IncomingHttpHeaders = {}
  for (const [name, value] of Object.entries(from)) if (!HOP_BY_HOP.includes(name) && !named.includes(name)) headers[name] = value
  return headers
}

/**
 * The proxy, as a handler for the stand-in's HTTP server: `true` when the
 * request is under {@link PREVIEW_PREFIX} (it then answers it), `false` for
 * the caller to route. No API key is asked for; WebSocket upgrades are not proxied.
 */
export function previewProxy(options: PreviewProxyOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { engine, store, links } = options
  const pathOf = (req: IncomingMessage) => (req.url ?? '/').split('?')[0]!

  const fail = (req: IncomingMessage, res: ServerResponse, statusCode: number, message: string): void => {
    const body = JSON.stringify({ statusCode, message, path: pathOf(req), timestamp: new Date().toISOString() })
    res.writeHead(statusCode, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body)
    options.onAnswer?.(req.method ?? 'GET', pathOf(req), statusCode)
  }

  /** The sandbox and port a request may reach, or an error status and message. */
  const resolve = (req: IncomingMessage, port: number, key: string): SandboxRecord | [number, string] => {
    const direct = store.byId.get(key)
    if (direct) {
      if (!direct.dto.public && req.headers[PREVIEW_TOKEN_HEADER] !== direct.previewToken) return [401, `a preview of private sandbox ${key} needs its token (getPreviewLink's token) in the ${PREVIEW_TOKEN_HEADER} header`]
      return direct
    }
    const link = links.byToken.get(key)
    if (!link || link.port !== port) return [404, `no sandbox and no signed preview URL ${port}-${key}`]
    if (Date.now() >= link.expiresAt) return [401, `the signed preview URL ${port}-${key} has expired`]
    return store.byId.get(link.sandboxId) ?? [404, `sandbox ${link.sandboxId} of signed preview URL ${port}-${key} no longer exists`]
  }

  const forward = async (req: IncomingMessage, res: ServerResponse, port: number, key: string, path: string): Promise<void> => {
    const found = resolve(req, port, key)
    if (Array.isArray(found)) return fail(req, res, ...found)
    const { dto, containerId } = found
    if (dto.networkBlockAll) return fail(req, res, 409, `sandbox ${dto.id} was created with networkBlockAll: its stand-in container has no network (NetworkMode none), so its ports cannot be previewed`)
    if (dto.state !== 'started') return fail(req, res, 409, `sandbox ${dto.id} is ${dto.state}; start it to reach its ports`)
    const address = await engine.address(containerId)
    if (address === undefined) return fail(req, res, 502, `sandbox ${dto.id} has no address on Docker's default bridge`)

    const headers = endToEnd(req.headers)
    delete headers[PREVIEW_TOKEN_HEADER]
    headers['x-forwarded-host'] = req.headers.host
    headers['x-forwarded-proto'] = 'http'
    headers['x-forwarded-prefix'] = `${PREVIEW_PREFIX}${port}-${key}`
    const upstream = request({ host: address, port, method: req.method, path, headers })
    upstream.on('response', (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers))
      answer.on('error', () => res.destroy())
      answer.pipe(res)
      options.onAnswer?.(req.method ?? 'GET', pathOf(req), answer.statusCode ?? 502)
    })
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (!res.headersSent) fail(req, res, 502, `nothing answers on port ${port} of sandbox ${dto.id} (${error.code ?? error.message})`)
      else res.destroy(error)
    })
    // The client went away before the answer ended: stop the upstream request too.
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy()
    })
    req.on('error', () => upstream.destroy())
    req.pipe(upstream)
  }

  return (req, res) => {
    const url = req.url ?? '/'
    if (!url.startsWith(PREVIEW_PREFIX)) return false
    const rest = url.slice(PREVIEW_PREFIX.length)
    const end = rest.search(/[/?]/)
    const head = end === -1 ? rest : rest.slice(0, end)
    const tail = end === -1 ? '/' : rest.slice(end)
    const match = /^(\d{1,5})-([A-Za-z0-9-]+)$/.exec(head)
    if (!match) {
      fail(req, res, 404, `a preview path is ${PREVIEW_PREFIX}{port}-{sandboxId or signed token}/…`)
      return true
    }
    let port: number
    try {
      port = portOf(match[1])
    } catch (error) {
      fail(req, res, 400, (error as Error).message)
      return true
    }
    forward(req, res, port, match[2]!, tail.startsWith('?') ? `/${tail}` : tail).catch((error: unknown) => {
      if (!res.headersSent) fail(req, res, 500, error instanceof Error ? error.message : String(error))
      else res.destroy()
    })
    return true
  }
}
