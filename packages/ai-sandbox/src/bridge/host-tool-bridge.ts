/**
 * `startHostToolBridge`: the node:http transport of the tool bridge, one per
 * run: one address, the run's bearer token, a bounded body, then
 * `handleBridgeJsonRpc`. Closing it aborts running tools and drops every
 * connection. Invariant: a request without the token gets 401, reaching no tool.
 * Design notes: docs/design/bridge.md
 */
import { randomBytes } from 'node:crypto'
import { authorized, digest } from './bearer.js'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener, RequestError } from '@hono/node-server'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { ToolBridgeError } from './errors.js'
import { handleBridgeJsonRpc } from './handle-bridge-json-rpc.js'
import type { ToolBridgeCore } from './tool-bridge-core.js'

/** The path the MCP endpoint is served on. */
export const TOOL_BRIDGE_PATH = '/mcp'

const optionsSchema = z
  .object({
    core: z.custom<ToolBridgeCore>((v) => typeof (v as ToolBridgeCore | undefined)?.callTool === 'function', { message: 'expected a core from createToolBridgeCore()' }),
    host: z.string().min(1).optional(),
    port: z.number().int().min(0).max(65535).optional(),
    token: z.string().min(16, 'use at least 16 characters; omit it for a random 32-byte token').optional(),
    maxBodyBytes: z.number().int().positive().optional(),
  })
  .strict()

/** Options of {@link startHostToolBridge}. */
export interface HostToolBridgeOptions {
  /** From `createToolBridgeCore`. */
  core: ToolBridgeCore
  /** Address to listen on. Default `127.0.0.1`. Use the address the sandbox reaches the host at (`handle.hostAccess()`), not all interfaces. */
  host?: string
  /** Port. Default `0` (a free port). */
  port?: number
  /** The bearer token. Default: 32 random bytes, base64url. */
  token?: string
  /** Largest request body accepted, in bytes. Default 4 MiB. */
  maxBodyBytes?: number
}

/** A running host bridge. */
export interface HostToolBridge {
  /** The endpoint as seen from the host, e.g. `http://127.0.0.1:41234/mcp`. */
  readonly url: string
  /** The port it listens on. */
  readonly port: number
  /** The bearer token requests must carry (`Authorization: Bearer <token>`). */
  readonly token: string
  /** Abort running tools, drop connections and stop listening. Idempotent. */
  close: () => Promise<void>
}

/**
 * Serve `core` over HTTP for one run.
 *
 * @param options - See {@link HostToolBridgeOptions}.
 * @returns The running bridge; call `close()` when the run ends.
 * @throws SandboxConfigError naming the field (e.g. `startHostToolBridge.port`) for an invalid option.
 * @throws ToolBridgeError `listen-failed` when the address cannot be bound (e.g. not an address of this machine).
 * @example
 * ```ts
 * const bridge = await startHostToolBridge({ core: createToolBridgeCore({ tools }) })
 * try { // give the agent bridge.url and bridge.token
 * } finally { await bridge.close() }
 * ```
 */
export async function startHostToolBridge(options: HostToolBridgeOptions): Promise<HostToolBridge> {
  const { core, host = '127.0.0.1', port = 0, maxBodyBytes = 4 * 1024 * 1024, token = randomBytes(32).toString('base64url') } = parseOptions(optionsSchema, options, 'startHostToolBridge')
  const expected = digest(token)
  const closing = new AbortController()
  // @hono/node-server turns node:http's request into a Fetch `Request` (its signal fires when the client goes) and
  // writes the `Response` back. It leaves the process's global Request and Response alone.
  const server = createServer(getRequestListener(serve, { overrideGlobalObjects: false, errorHandler: (error) => rpcError(error instanceof RequestError ? 400 : 500, -32603, `tool bridge: ${String(error)}`) }))

  async function serve(request: Request): Promise<Response> {
    if (!authorized(request.headers.get('authorization'), expected)) {
      return rpcError(401, -32001, 'Unauthorized: send the run token as "Authorization: Bearer <token>".', { 'www-authenticate': 'Bearer' })
    }
    if (new URL(request.url).pathname !== TOOL_BRIDGE_PATH) return plain(404, `Not found: the MCP endpoint is ${TOOL_BRIDGE_PATH}.`)
    const body = await readBody(request, maxBodyBytes)
    if (body === undefined) return plain(413, `Request body over ${maxBodyBytes} bytes.`)
    // The bounded body, and a signal that also fires when the bridge closes.
    const bounded = new Request(request.url, { method: request.method, headers: request.headers, ...(body.size > 0 ? { body } : {}), signal: AbortSignal.any([request.signal, closing.signal]) })
    return handleBridgeJsonRpc(core, bounded)
  }

  await listen(server, host, port)
  const bound = (server.address() as AddressInfo).port
  let closed: Promise<void> | undefined
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}${TOOL_BRIDGE_PATH}`,
    port: bound,
    token,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        closing.abort()
        server.close(() => resolve())
        server.closeAllConnections()
      })),
  }
}

/** The body, or `undefined` when it passes `limit` bytes (the rest is read and discarded, so the 413 can be sent). */
async function readBody(request: Request, limit: number): Promise<Blob | undefined> {
  const reader = request.body?.getReader()
  const parts: Uint8Array<ArrayBuffer>[] = []
  let size = 0
  for (;;) {
    const { done, value } = (await reader?.read()) ?? { done: true }
    if (done) return size > limit ? undefined : new Blob(parts)
    size += value.byteLength
    if (size <= limit) parts.push(value)
  }
}

function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message }, id: null }, { status, headers })
}

function plain(status: number, text: string): Response {
  return new Response(text, { status, headers: { 'content-type': 'text/plain' } })
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new ToolBridgeError('listen-failed', `The tool bridge could not listen on ${host}:${port} (${error.code ?? error.message}). Pass a local address the sandbox can reach, or inject a ToolBridgeProvisioner.`, { cause: error }))
    })
    server.listen(port, host, () => resolve())
  })
}
