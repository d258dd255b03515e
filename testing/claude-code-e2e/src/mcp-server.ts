/**
 * A real MCP server for tests: `@modelcontextprotocol/sdk`'s Streamable HTTP
 * transport in stateless mode on node:http, 127.0.0.1, a free port, serving
 * one tool, `lookup_issue`. Requests without `Authorization: Bearer <token>`
 * get 401 before the SDK sees them, so a connected client proves its header
 * arrived. It records requests (never their headers) and tool calls.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

/** The answer `lookup_issue` gives for an issue id. */
export const issueAnswer = (id: string): string => `Issue ${id}: "Login button misaligned on mobile", open, assigned to ada.`

/** One HTTP request the server got (credentials are not recorded). */
export interface McpHttpRequest {
  method: string
  status: number
  authorized: boolean
  /** JSON-RPC method of a POST, e.g. `initialize`, `tools/list`. */
  rpc?: string
}

/** A running MCP server. */
export interface McpTestServer {
  /** The endpoint, e.g. `http://127.0.0.1:40123/mcp`. */
  readonly url: string
  readonly requests: McpHttpRequest[]
  /** Arguments of every `lookup_issue` call. */
  readonly calls: { id: string }[]
  /** Close the server. Safe to call twice. */
  stop: () => Promise<void>
}

/**
 * Start the server.
 * @param input - `token`: the bearer token to accept.
 * @example
 * ```ts
 * const mcp = await startMcpServer({ token: 'tok' })
 * try { ... mcpSkill('issues', { url: mcp.url, headers: { Authorization: bearer(secrets.MCP_TOKEN) } }) ... } finally { await mcp.stop() }
 * ```
 */
export async function startMcpServer(input: { token: string }): Promise<McpTestServer> {
  const requests: McpHttpRequest[] = []
  const calls: { id: string }[] = []
  const server = createServer((req, res) => {
    const record: McpHttpRequest = { method: req.method ?? 'GET', status: 0, authorized: req.headers.authorization === `Bearer ${input.token}` }
    requests.push(record)
    res.on('finish', () => (record.status = res.statusCode))
    void handle(req, res, record, calls).catch(() => {
      if (!res.headersSent) res.writeHead(500).end()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  let stopped: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    calls,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })),
  }
}

async function handle(req: IncomingMessage, res: ServerResponse, record: McpHttpRequest, calls: { id: string }[]): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1')
  if (url.pathname !== '/mcp') return void res.writeHead(404).end()
  if (!record.authorized) {
    req.resume()
    res.writeHead(401, { 'Content-Type': 'application/json' })
    return void res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'missing or wrong bearer token' }, id: null }))
  }
  // Stateless: no session, so no server-to-client stream (GET) and nothing to delete.
  if (req.method !== 'POST') return void res.writeHead(405, { Allow: 'POST' }).end()
  const body = JSON.parse((await readBody(req)) || 'null') as { method?: string } | { method?: string }[] | null
  const first = Array.isArray(body) ? body[0] : body
  if (typeof first?.method === 'string') record.rpc = first.method

  const mcp = new Server({ name: 'issues-test-server', version: '1.0.0' }, { capabilities: { tools: {} } })
  mcp.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: 'lookup_issue',
        description: 'Look up an issue of the tracker by its id.',
        inputSchema: { type: 'object' as const, properties: { id: { type: 'string', description: 'Issue id, e.g. ISS-7' } }, required: ['id'] },
      },
    ],
  }))
  mcp.setRequestHandler(CallToolRequestSchema, (request) => {
    if (request.params.name !== 'lookup_issue') return { content: [{ type: 'text' as const, text: `unknown tool ${request.params.name}` }], isError: true }
    const id = String((request.params.arguments as { id?: unknown } | undefined)?.id ?? '')
    calls.push({ id })
    return { content: [{ type: 'text' as const, text: issueAnswer(id) }] }
  })
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
  res.on('close', () => {
    void transport.close()
    void mcp.close()
  })
  await mcp.connect(transport)
  await transport.handleRequest(req, res, body)
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = []
  for await (const part of req) parts.push(part as Buffer)
  return Buffer.concat(parts).toString('utf8')
}
