/**
 * A minimal MCP client for the fake agent: JSON-RPC over streamable HTTP
 * (`initialize`, `notifications/initialized`, `tools/call`), reading either
 * a JSON or an SSE answer. Just enough to call a host tool through the
 * adapter's tool bridge.
 */

/** An MCP server over HTTP as ACP hands it over. */
export interface HttpMcpServer {
  name: string
  url: string
  headers: { name: string; value: string }[]
}

/**
 * Call one tool and return its text content.
 * @throws Error when the server answers with an HTTP or JSON-RPC error.
 */
export async function callMcpTool(server: HttpMcpServer, tool: string, args: Record<string, unknown>): Promise<{ text: string; isError: boolean }> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  for (const h of server.headers) headers[h.name] = h.value
  let id = 0
  const rpc = async (method: string, params: unknown, notification = false): Promise<any> => {
    const body = { jsonrpc: '2.0', method, params, ...(notification ? {} : { id: ++id }) }
    const res = await fetch(server.url, { method: 'POST', headers, body: JSON.stringify(body) })
    const session = res.headers.get('mcp-session-id')
    if (session) headers['mcp-session-id'] = session
    const text = await res.text()
    if (!res.ok) throw new Error(`MCP ${method}: HTTP ${res.status} ${text.slice(0, 200)}`)
    if (notification || text.trim() === '') return undefined
    const json = res.headers.get('content-type')?.includes('text/event-stream')
      ? JSON.parse(text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).at(-1) ?? '{}')
      : JSON.parse(text)
    if (json.error) throw new Error(`MCP ${method}: ${json.error.message}`)
    return json.result
  }
  await rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fake-grok', version: '0.1.0' } })
  await rpc('notifications/initialized', {}, true)
  const result = await rpc('tools/call', { name: tool, arguments: args })
  const text = (result?.content ?? []).map((c: { text?: string }) => c.text ?? '').join('\n')
  return { text, isError: result?.isError === true }
}
