/**
 * A real MCP server that records the exact bytes of every request header, for
 * the "header bytes as declared" suites of Claude Code, Codex and OpenCode
 * (they import this file). node:http on 127.0.0.1 and a free port, answering
 * with core's `handleBridgeJsonRpc` (the SDK's Streamable HTTP transport) and
 * one tool, `ping`. It authenticates nothing: the test compares what arrived.
 * Also here: the header values every suite declares, chosen to trip each
 * CLI's own substitution (`${VAR}`, `{env:…}`, `{file:…}`) and its escaping.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createToolBridgeCore, handleBridgeJsonRpc } from '@tanstack/ai-sandbox'

/**
 * Literal header values that a CLI must send unchanged. No leading or trailing
 * blanks: HTTP clients strip those from any header value. Longer non-ASCII
 * values are in {@link NON_ASCII_HEADERS}, apart, because OpenCode's HTTP
 * client cannot send them at all.
 */
export const LITERAL_HEADERS: Readonly<Record<string, string>> = {
  'X-Brace-Var': '${HOME}',
  'X-Brace-Default': '${NO_SUCH_VAR_7f3a:-fallback}',
  'X-Dollar-Var': '$HOME and $$',
  'X-Env-Ref': '{env:HOME}',
  'X-File-Ref': '{file:/etc/hostname}',
  'X-Both': 'a {env:PATH} b ${PATH} c {file:./x}',
  'X-Backslash': 'C:\\dir\\sub \\n \\${HOME} \\\\',
  'X-Quotes': 'say "hi" and \'bye\' `tick`',
  'X-Latin1-Short': 'héllo ñ ß',
}

/** Non-ASCII header values: latin-1 past 12 characters, and characters above U+00FF (UTF-8 of 3 and 4 bytes). */
export const NON_ASCII_HEADERS: Readonly<Record<string, string>> = {
  'X-Latin1-Long': 'héllo wörld, ñ and ß',
  'X-Unicode': 'check ✓ 日本 🚀',
}

/** A secret value that every CLI's substitution would rewrite if it were written unguarded. */
export const ODD_SECRET_VALUE = 'odd-${HOME}-{env:HOME}-{file:/etc/hostname}-"q"-\\b'

/** One HTTP request the server got. */
export interface LoggedRequest {
  method: string
  /** JSON-RPC method of a POST, e.g. `initialize`, `tools/call`. */
  rpc?: string
  /** Every header as the bytes that arrived, by lower-case name (a repeated header keeps each value). */
  headers: Map<string, Buffer[]>
}

/** A running server. */
export interface HeaderMcpServer {
  /** The endpoint, e.g. `http://127.0.0.1:40123/mcp`. */
  readonly url: string
  readonly requests: LoggedRequest[]
  /** How many times `ping` ran. */
  readonly pings: () => number
  /** Close the server. Safe to call twice. */
  stop: () => Promise<void>
}

/**
 * Start the server; its MCP name is `name` and its tool `ping` answers `pong from <name>`.
 * @example
 * ```ts
 * const server = await startHeaderMcpServer('hdr')
 * try { ... mcpSkill('hdr', { url: server.url, headers: LITERAL_HEADERS }) ... } finally { await server.stop() }
 * ```
 */
export async function startHeaderMcpServer(name: string): Promise<HeaderMcpServer> {
  const requests: LoggedRequest[] = []
  let pings = 0
  const ping = { name: 'ping', description: 'Answer pong.', inputSchema: { type: 'object', properties: {} }, execute: () => (pings++, `pong from ${name}`) }
  const core = createToolBridgeCore({ tools: [ping], name })
  const server = createServer((req, res) => {
    serve(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const logged: LoggedRequest = { method: req.method ?? 'GET', headers: rawHeaders(req) }
    requests.push(logged)
    const body = await readBody(req)
    const first = parseRpc(body)
    if (first) logged.rpc = first
    // Only what the transport needs: the recorded values may hold bytes a Headers object would refuse.
    const headers = new Headers()
    for (const keep of ['content-type', 'accept', 'mcp-protocol-version', 'mcp-session-id']) {
      const value = req.headers[keep]
      if (typeof value === 'string') headers.set(keep, value)
    }
    const response = await handleBridgeJsonRpc(core, new Request(`http://mcp${req.url ?? '/'}`, { method: req.method ?? 'GET', headers, ...(body.length > 0 ? { body } : {}) }))
    const out: Record<string, string> = {}
    response.headers.forEach((value, key) => (out[key] = value))
    res.writeHead(response.status, out)
    res.end(Buffer.from(await response.arrayBuffer()))
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  let stopped: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    pings: () => pings,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })),
  }
}

/**
 * For each declared header, the distinct values that arrived over all POST
 * requests: UTF-8 text when the bytes decode as such, `0x…` hex otherwise,
 * and `<missing>` for a request without it, so a failing assertion shows
 * what the CLI sent.
 */
export function receivedHeaders(server: HeaderMcpServer, names: readonly string[]): Record<string, string[]> {
  const posts = server.requests.filter((r) => r.method === 'POST')
  return Object.fromEntries(
    names.map((name) => {
      const seen = new Set(posts.flatMap((r) => r.headers.get(name.toLowerCase())?.map(show) ?? ['<missing>']))
      return [name, [...seen]]
    }),
  )
}

/** What {@link receivedHeaders} should report for headers sent exactly as declared: one UTF-8 value each. */
export function expectedHeaders(declared: Readonly<Record<string, string>>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(declared).map(([name, value]) => [name, [show(Buffer.from(value, 'utf8'))]]))
}

function show(bytes: Buffer): string {
  const text = bytes.toString('utf8')
  return Buffer.from(text, 'utf8').equals(bytes) ? text : `0x${bytes.toString('hex')}`
}

/** Header bytes as they arrived: node keeps each byte as one latin1 character in `rawHeaders`. */
function rawHeaders(req: IncomingMessage): Map<string, Buffer[]> {
  const headers = new Map<string, Buffer[]>()
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!.toLowerCase()
    headers.set(name, [...(headers.get(name) ?? []), Buffer.from(req.rawHeaders[i + 1]!, 'latin1')])
  }
  return headers
}

function parseRpc(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { method?: unknown } | { method?: unknown }[]
    const first = Array.isArray(parsed) ? parsed[0] : parsed
    return typeof first?.method === 'string' ? first.method : undefined
  } catch {
    return undefined
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = []
  for await (const part of req) parts.push(part as Buffer)
  return Buffer.concat(parts).toString('utf8')
}
