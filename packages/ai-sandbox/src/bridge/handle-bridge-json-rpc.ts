/**
 * `handleBridgeJsonRpc`: MCP's Streamable HTTP transport over a
 * {@link ToolBridgeCore} as a Web `Request` → `Response` function, served by
 * node:http or an edge `fetch` handler alike. Stateless, plain JSON, never SSE;
 * GET and DELETE get 405. It does not authenticate.
 * Design notes: docs/design/bridge.md
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { ErrorCode, ListToolsRequestSchema, McpError, type CallToolRequest } from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { ToolBridgeError } from './errors.js'
import type { ToolBridgeCore } from './tool-bridge-core.js'

/** A `tools/call` request of any shape; the SDK validates it properly (see `mcpServerFor`). */
const ANY_TOOLS_CALL = z.object({ method: z.literal('tools/call'), params: z.unknown() })

/** The version reported on `initialize`. */
const SERVER_VERSION = '1.0.0'

/**
 * Answer one MCP HTTP request against `core`. Authenticate BEFORE calling it
 * (`startHostToolBridge` checks a bearer token; an edge handler does its own).
 *
 * @param core - From `createToolBridgeCore`.
 * @param request - A Web `Request` (POST with a JSON-RPC message or batch).
 * @returns The `Response`: JSON-RPC results; `isError: true` results for tools that threw;
 *   JSON-RPC error `-32602` (invalid params) for an unknown tool or invalid arguments;
 *   405 for GET/DELETE; 4xx from the SDK for malformed requests. It does not throw.
 * @example
 * ```ts
 * export default { fetch: (request: Request) => handleBridgeJsonRpc(core, request) }
 * ```
 */
export async function handleBridgeJsonRpc(core: ToolBridgeCore, request: Request): Promise<Response> {
  if (request.method !== 'POST') {
    return Response.json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP server answers POST only (no server-sent stream).' }, id: null }, { status: 405, headers: { allow: 'POST' } })
  }
  core.noteRequest()
  const server = mcpServerFor(core, request.signal)
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
  try {
    await server.connect(transport)
    return await transport.handleRequest(request)
  } finally {
    await server.close()
  }
}

function mcpServerFor(core: ToolBridgeCore, requestSignal: AbortSignal): Server {
  const server = new Server({ name: core.name, version: SERVER_VERSION }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: core.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema })) }))
  // The SDK's Server re-checks every tools/call against CallToolRequestSchema and answers a malformed one
  // (arguments: null, a non-string name) with -32602; registering the strict schema here would make the
  // base protocol reject it first as -32603 (internal error). So the outer schema only pins the method.
  server.setRequestHandler(ANY_TOOLS_CALL, async (request, extra) => {
    const call = request as CallToolRequest
    try {
      return await core.callTool({
        name: call.params.name,
        arguments: call.params.arguments ?? {},
        ...(call.params._meta ? { meta: call.params._meta as Record<string, unknown> } : {}),
        signal: AbortSignal.any([extra.signal, requestSignal]),
      })
    } catch (error) {
      if (ToolBridgeError.isInstance(error) && (error.reason === 'unknown-tool' || error.reason === 'invalid-arguments')) throw new McpError(ErrorCode.InvalidParams, error.message, { reason: error.reason })
      throw error
    }
  })
  return server
}
