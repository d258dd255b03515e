/**
 * `routedToolBridge`: a `ToolBridgeProvisioner` for sandboxes that cannot
 * reach this host by an address of it (a cloud sandbox such as Daytona's):
 * each run's bridge is served under a route of one `fetch` handler the app
 * mounts on a server the sandbox can reach (a public URL, a tunnel, an
 * ingress). Owns the routes and their tokens; a closed run's route is gone.
 */
import { randomBytes } from 'node:crypto'
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { authorized, digest } from './bearer.js'
import { handleBridgeJsonRpc } from './handle-bridge-json-rpc.js'
import type { ToolBridgeProvisioner } from './provisioner.js'
import type { ToolBridgeCore } from './tool-bridge-core.js'

/** Options of {@link routedToolBridge}. */
export interface RoutedToolBridgeOptions {
  /**
   * Where the sandbox reaches the app's `fetch` mount, e.g.
   * `https://agents.example.com/tool-bridge`: each run's URL is this plus `/<route>`.
   */
  publicUrl: string
}

/** What {@link routedToolBridge} returns. */
export interface RoutedToolBridge {
  /** Give it to `provideToolBridgeProvisioner` (a middleware after `withSandbox`). */
  readonly provisioner: ToolBridgeProvisioner
  /**
   * Answer one request under the mount: the route is the last path segment.
   * 404 for a route that is not (or no longer) served, 401 without the run's
   * bearer token; otherwise MCP's Streamable HTTP answer (`handleBridgeJsonRpc`).
   */
  fetch: (request: Request) => Promise<Response>
  /** How many runs are served now. */
  readonly size: number
}

const optionsSchema = z.object({
  publicUrl: z.url({ protocol: /^https?$/, message: 'expected an http(s) URL the sandbox can reach, e.g. https://agents.example.com/tool-bridge' }),
})

/**
 * Serve every run's tool bridge from one `fetch` handler under a public URL.
 * Each run gets a random route and its own bearer token (32 random bytes);
 * both end with the run (`close`).
 *
 * @param options - `publicUrl`: the mount as the sandbox sees it.
 * @returns `{ provisioner, fetch, size }`.
 * @throws SandboxConfigError naming `routedToolBridge.publicUrl` when it is not an http(s) URL.
 * @example
 * ```ts
 * const bridge = routedToolBridge({ publicUrl: 'https://agents.example.com/tool-bridge' })
 * app.all('/tool-bridge/*', (c) => bridge.fetch(c.req.raw)) // any server the sandbox reaches
 * const withBridge = defineChatMiddleware({
 *   name: 'routed-tool-bridge',
 *   provides: [ToolBridgeProvisionerCapability],
 *   setup: (ctx) => provideToolBridgeProvisioner(ctx, bridge.provisioner),
 * })
 * chat({ adapter, messages, tools, middleware: [withSandbox(sandbox), withBridge] })
 * ```
 */
export function routedToolBridge(options: RoutedToolBridgeOptions): RoutedToolBridge {
  const { publicUrl } = parseOptions(optionsSchema, options, 'routedToolBridge')
  const base = publicUrl.replace(/\/+$/, '')
  const routes = new Map<string, { core: ToolBridgeCore; expected: Buffer }>()
  return {
    provisioner: {
      provision: async ({ core }) => {
        const route = randomBytes(18).toString('base64url')
        const token = randomBytes(32).toString('base64url')
        routes.set(route, { core, expected: digest(token) })
        return { url: `${base}/${route}`, token, close: async () => void routes.delete(route) }
      },
    },
    fetch: async (request) => {
      const route = new URL(request.url).pathname.split('/').filter((part) => part !== '').at(-1) ?? ''
      const entry = routes.get(route)
      if (!entry) return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'No tool bridge is served at this route (the run ended, or the URL is wrong).' }, id: null }, { status: 404 })
      if (!authorized(request.headers.get('authorization'), entry.expected)) {
        return Response.json({ jsonrpc: '2.0', error: { code: -32001, message: 'Unauthorized: send the run token as "Authorization: Bearer <token>".' }, id: null }, { status: 401, headers: { 'www-authenticate': 'Bearer' } })
      }
      return handleBridgeJsonRpc(entry.core, request)
    },
    get size() {
      return routes.size
    },
  }
}
