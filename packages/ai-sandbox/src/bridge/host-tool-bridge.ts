/**
 * `startHostToolBridge`: the node:http transport of the tool bridge, one per
 * run. It listens on one address, admits only requests carrying the run's
 * bearer token (compared in constant time), and hands them to
 * `handleBridgeJsonRpc`. Closing it aborts tools still running and drops
 * every connection, so nothing of the run outlives it.
 * Invariant: a request without the token gets 401 and reaches no tool.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
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
  const server = createServer((req, res) => {
    serve(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: `tool bridge: ${String(error)}` }, id: null }))
    })
  })

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!authorized(req.headers.authorization, expected)) {
      req.resume()
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Unauthorized: send the run token as "Authorization: Bearer <token>".' }, id: null }))
      return
    }
    if (new URL(req.url ?? '/', 'http://bridge').pathname !== TOOL_BRIDGE_PATH) {
      req.resume()
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`Not found: the MCP endpoint is ${TOOL_BRIDGE_PATH}.`)
      return
    }
    const gone = new AbortController()
    res.on('close', () => {
      if (!res.writableFinished) gone.abort()
    })
    const body = await readBody(req, maxBodyBytes)
    if (body === undefined) {
      res.writeHead(413, { 'content-type': 'text/plain' }).end(`Request body over ${maxBodyBytes} bytes.`)
      return
    }
    const request = new Request(`http://bridge${req.url}`, {
      method: req.method ?? 'GET',
      headers: headersOf(req),
      ...(body.length > 0 ? { body: body.toString('utf8') } : {}),
      signal: AbortSignal.any([gone.signal, closing.signal]),
    })
    const response = await handleBridgeJsonRpc(core, request)
    const headers: Record<string, string> = {}
    response.headers.forEach((value, name) => (headers[name] = value))
    res.writeHead(response.status, headers)
    res.end(Buffer.from(await response.arrayBuffer()))
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

/** Constant-time check of an `Authorization: Bearer <token>` header (digests make the lengths equal). */
function authorized(header: string | undefined, expected: Buffer): boolean {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')
  return timingSafeEqual(digest(match?.[1] ?? ''), expected) && match !== null
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest()
}

function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one)
  }
  return headers
}

/** The body, or `undefined` when it passes `limit` bytes (the rest is read and discarded, so the 413 can be sent). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    let size = 0
    req.on('data', (part: Buffer) => {
      size += part.length
      if (size <= limit) parts.push(part)
    })
    req.on('end', () => resolve(size > limit ? undefined : Buffer.concat(parts)))
    req.on('error', reject)
  })
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new ToolBridgeError('listen-failed', `The tool bridge could not listen on ${host}:${port} (${error.code ?? error.message}). Pass a local address the sandbox can reach, or inject a ToolBridgeProvisioner.`, { cause: error }))
    })
    server.listen(port, host, () => resolve())
  })
}
