/**
 * A pass-through in front of aimock that teaches its Responses stream one
 * thing aimock cannot express: the `namespace` of a function call. Codex
 * offers MCP tools to the model as a namespace tool (`mcp__<server>` holding
 * `<tool>`), and the real API answers such a call as
 * `{ type: 'function_call', namespace: 'mcp__<server>', name: '<tool>' }`.
 * Fixtures write the call as `mcp__<server>__<tool>`; this proxy splits it.
 * Everything else passes through byte for byte. It also keeps each request
 * body as Codex sent it (aimock's journal drops fields such as `text.format`).
 * Loopback only.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A running proxy. */
export interface NamespaceProxy {
  /** Base URL, e.g. `http://127.0.0.1:40211` (Codex wants `<url>/v1`). */
  readonly url: string
  readonly port: number
  /** Every request body that passed, oldest first, parsed as JSON (`undefined` for a body that is not). */
  bodies: () => unknown[]
  /** Close the server and its connections. Safe to call twice. */
  stop: () => Promise<void>
}

const NAMESPACED = /^(mcp__[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*?)__(.+)$/

/** `mcp__tanstack__get_weather` → `{ namespace: 'mcp__tanstack', name: 'get_weather' }`. */
function split(item: Record<string, unknown>): void {
  if (item.type !== 'function_call' || typeof item.name !== 'string' || item.namespace !== undefined) return
  const match = NAMESPACED.exec(item.name)
  if (!match) return
  item.namespace = match[1]
  item.name = match[2]
}

function rewriteEvent(data: string): string {
  let event: { item?: Record<string, unknown>; response?: { output?: Record<string, unknown>[] } }
  try {
    event = JSON.parse(data) as typeof event
  } catch {
    return data
  }
  if (event.item && typeof event.item === 'object') split(event.item)
  for (const item of event.response?.output ?? []) if (item && typeof item === 'object') split(item)
  return JSON.stringify(event)
}

/**
 * Start the proxy on `host` (default 127.0.0.1) in front of `target` (aimock's base URL).
 * @example
 * ```ts
 * const proxy = await startNamespaceProxy(model.url)
 * try { ... base_url: `${proxy.url}/v1` ... } finally { await proxy.stop() }
 * ```
 */
export async function startNamespaceProxy(target: string, host = '127.0.0.1'): Promise<NamespaceProxy> {
  const upstream = new URL(target)
  const bodies: Buffer[] = []
  const server = createServer((req, res) => forward(req, res, upstream, bodies))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, host, resolve)
  })
  const port = (server.address() as AddressInfo).port
  let stopped: Promise<void> | undefined
  return {
    url: `http://${host}:${port}`,
    port,
    bodies: () => bodies.map(parseBody),
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })),
  }
}

function parseBody(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8')) as unknown
  } catch {
    return undefined
  }
}

function forward(req: IncomingMessage, res: ServerResponse, upstream: URL, bodies: Buffer[]): void {
  const parts: Buffer[] = []
  req.on('data', (part: Buffer) => parts.push(part))
  req.on('end', () => bodies.push(Buffer.concat(parts)))
  const out = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host, 'accept-encoding': 'identity' } }, (answer) => {
    const sse = String(answer.headers['content-type'] ?? '').includes('text/event-stream')
    const headers = { ...answer.headers }
    if (sse) delete headers['content-length']
    res.writeHead(answer.statusCode ?? 502, headers)
    if (!sse) return void answer.pipe(res)
    let pending = ''
    answer.setEncoding('utf8')
    answer.on('data', (text: string) => {
      pending += text
      const lines = pending.split('\n')
      pending = lines.pop()!
      res.write(lines.map((line) => (line.startsWith('data: ') ? `data: ${rewriteEvent(line.slice(6))}` : line)).join('\n') + '\n')
    })
    answer.on('end', () => res.end(pending))
  })
  out.on('error', (error) => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' })
    res.end(`namespace proxy: ${error.message}`)
  })
  req.pipe(out)
}
