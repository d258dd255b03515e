/**
 * A stand-in for Daytona's HTTP APIs, for tests whose only client is the real
 * `@daytona/sdk`: the control plane at the root of its URL (pass it as
 * `apiUrl`), the toolbox under `/toolbox/{id}`, one real container per sandbox.
 * Session logs follow over a WebSocket; the socket.io event channel is
 * refused, so the SDK falls back to polling.
 * It proves protocol conformance, not Daytona's server behaviour (README.md).
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { Hono } from 'hono'
import { controlRoutes, SandboxStore } from './control.js'
import { SandboxEngine } from './engine.js'
import { errorResponse, StandinError } from './errors.js'
import { followLogsUpgrade, SessionStore } from './sessions.js'
import { toolboxRoutes } from './toolbox.js'

export { SANDBOX_HOME, SANDBOX_USER, SANDBOX_WORKDIR } from './engine.js'

/** The image `scripts/docker/images.sh daytona` builds: user `daytona` with `sudo -n`, workdir `/home/daytona/workspace` (TANSTACK_SANDBOX_DAYTONA_IMAGE names another). */
export const DAYTONA_IMAGE = process.env.TANSTACK_SANDBOX_DAYTONA_IMAGE ?? 'tanstack-sandbox-daytona:bookworm'

/** Options of {@link startDaytonaStandin}. */
export interface DaytonaStandinOptions {
  /** The local image a create with no snapshot runs. Default {@link DAYTONA_IMAGE}; an image without the user and workdir (the plain debian one) works too, without sudo. */
  image?: string
  /** Further snapshot names → local images a create may name. The default image is also known by its own name and as `default`. */
  snapshots?: Record<string, string>
  /** Labels put on every container, so a test can find what it left behind. */
  labels?: Record<string, string>
  /** The API key requests must carry as `Authorization: Bearer <key>`. Default `test`. */
  apiKey?: string
  /** Address to listen on. Default `127.0.0.1`, port chosen by the OS. */
  host?: string
}

/** A running stand-in. */
export interface DaytonaStandin {
  /** Pass as `new Daytona({ apiUrl })`. */
  readonly apiUrl: string
  /** The `toolboxProxyUrl` every sandbox DTO carries. */
  readonly toolboxProxyUrl: string
  /** The ids of the containers behind the sandboxes that exist now. */
  containerIds(): string[]
  /** Stop listening and remove every container still there. */
  close(): Promise<void>
}

/** Start a stand-in server; resolves once it listens. */
export async function startDaytonaStandin(options: DaytonaStandinOptions = {}): Promise<DaytonaStandin> {
  const image = options.image ?? DAYTONA_IMAGE
  const apiKey = options.apiKey ?? 'test'
  const engine = new SandboxEngine(options.labels ?? {})
  const store = new SandboxStore()
  let base = ''

  const app = new Hono()
  app.onError(errorResponse)
  app.notFound((c) => errorResponse(new StandinError(404, `the stand-in has no route ${c.req.method} ${c.req.path}`), c))
  app.use('*', async (c, next) => {
    if (c.req.header('authorization') !== `Bearer ${apiKey}`) throw new StandinError(401, 'Invalid credentials: the Authorization header must carry the API key as a Bearer token')
    await next()
  })
  controlRoutes(app, {
    engine,
    store,
    snapshots: { default: image, [image]: image, ...options.snapshots },
    defaultSnapshot: 'default',
    toolboxProxyUrl: () => `${base}/toolbox`,
  })
  const sessions = new SessionStore()
  toolboxRoutes(app, engine, store, sessions)

  const server = createServer(getRequestListener(app.fetch))
  // The follow-logs socket of a session command; every other upgrade (the SDK's socket.io event channel) is refused, so the SDK polls.
  const followLogs = followLogsUpgrade(sessions, (id) => store.find(id))
  server.on('upgrade', (request, socket, head: Buffer) => {
    const status = request.headers.authorization !== `Bearer ${apiKey}` ? '401 Unauthorized' : followLogs(request, socket, head) ? undefined : '404 Not Found'
    if (status) socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, options.host ?? '127.0.0.1', () => resolve())
  })
  const { address, port } = server.address() as AddressInfo
  base = `http://${address.includes(':') ? `[${address}]` : address}:${port}`

  return {
    apiUrl: base,
    toolboxProxyUrl: `${base}/toolbox`,
    containerIds: () => [...store.byId.values()].map((r) => r.containerId),
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await Promise.all([...store.byId.values()].map((r) => engine.remove(r.containerId)))
      store.byId.clear()
    },
  }
}
