/**
 * The MCP SDK's own client over Streamable HTTP, for bridge tests: connect to
 * a bridge URL with a bearer token (or through a custom fetch, for the
 * transport-free dispatcher), and close it again.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

/** Connect an SDK client to `url`, sending `token` as a bearer token when given. */
export async function connectClient(url: string, options: { token?: string; fetch?: (input: string | URL, init?: RequestInit) => Promise<Response> } = {}): Promise<Client> {
  const client = new Client({ name: 'bridge-test', version: '0.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    ...(options.token !== undefined ? { requestInit: { headers: { Authorization: `Bearer ${options.token}` } } } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  })
  await client.connect(transport)
  return client
}

/** The text of a `tools/call` result's first content block. */
export function textOf(result: object): string {
  const [first] = ((result as { content?: unknown }).content ?? []) as { type: string; text?: string }[]
  return first?.type === 'text' ? (first.text ?? '') : ''
}

/** A JSON-RPC `tools/call` POST body, for raw HTTP requests. */
export function callBody(name: string, args: unknown, id = 1): string {
  return JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })
}

/** Headers an MCP client sends on a POST. */
export const MCP_POST_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
