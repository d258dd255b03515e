/**
 * A stand-in for Daytona's HTTP APIs, for tests whose only client is the real
 * `@daytona/sdk`: the control plane at the root of its URL (pass it as
 * `apiUrl`), the toolbox under `/toolbox/{id}`, the preview proxy under
 * `/preview/`, one real container per sandbox and one local image per
 * snapshot taken. Session logs follow over a WebSocket; the socket.io event
 * channel is refused, so the SDK falls back to polling. Failure switches on
 * the returned object make it fail as Daytona can (status, target, deletion,
 * outage, stream). It proves protocol conformance, not Daytona's server
 * behaviour (README.md).
 */
import { createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { getRequestListener } from '@hono/node-server'
import { Hono } from 'hono'
import type { ControlSettings } from './control.js'
import { controlRoutes, destroySandbox, SandboxStore } from './control.js'
import { SandboxEngine } from './engine.js'
import { errorResponse, StandinError } from './errors.js'
import type { FailNextOptions } from './faults.js'
import { Faults } from './faults.js'
import { previewProxy, previewRoutes, SignedLinks } from './preview.js'
import { followLogsUpgrade, SessionStore } from './sessions.js'
import { snapshotRoutes, SnapshotStore } from './snapshots.js'
import { toolboxRoutes } from './toolbox.js'

export type { FailNextOptions, FaultRoute } from './faults.js'
export { SANDBOX_HOME, SANDBOX_USER, SANDBOX_WORKDIR } from './engine.js'
export { PREVIEW_TOKEN_HEADER } from './preview.js'

/** The image `scripts/docker/images.sh daytona` builds: user `daytona` with `sudo -n`, workdir `/home/daytona/workspace` (TANSTACK_SANDBOX_DAYTONA_IMAGE names another). */
export const DAYTONA_IMAGE = process.env.TANSTACK_SANDBOX_DAYTONA_IMAGE ?? 'tanstack-sandbox-daytona:bookworm'

/** Options of {@link startDaytonaStandin}. */
export interface DaytonaStandinOptions {
  /** The local image a create with no snapshot runs. Default {@link DAYTONA_IMAGE}; an image without the user and workdir (the plain debian one) works too, without sudo. */
  image?: string
  /** Further snapshot names → local images a create may name. The default image is also known by its own name and as `default`. Deleting one of these snapshots forgets the name; the image stays. */
  snapshots?: Record<string, string>
  /** Labels put on every container and every image a snapshot or fork commits, so a test can find what it left behind. */
  labels?: Record<string, string>
  /** The API key requests must carry as `Authorization: Bearer <key>`. Default `test`. */
  apiKey?: string
  /** Address to listen on. Default `127.0.0.1`, port chosen by the OS. */
  host?: string
  /** Host paths bind-mounted into every container (e.g. an agent CLI a Daytona snapshot would have installed). Not a Daytona API feature. */
  mounts?: { source: string; target: string; readOnly?: boolean }[]
  /** Map `host.docker.internal` to the host in every container with a network, so it reaches a server on the host (as a cloud sandbox reaches the internet). Default `false`. */
  hostGateway?: boolean
}

/** One request the stand-in answered: method (`WS` for a WebSocket upgrade), path without the query, and status (101 for an accepted upgrade). */
export interface AnsweredRequest {
  method: string
  path: string
  status: number
}

/** How many answered requests {@link DaytonaStandin.requests} keeps (the oldest are dropped). */
const REQUEST_LOG_SIZE = 5000

/** A running stand-in. */
export interface DaytonaStandin {
  /** Pass as `new Daytona({ apiUrl })`. */
  readonly apiUrl: string
  /** The `toolboxProxyUrl` every sandbox DTO carries. */
  readonly toolboxProxyUrl: string
  /** The ids of the containers behind the sandboxes that exist now. */
  containerIds(): string[]
  /** The ids of the sandboxes that exist now. */
  sandboxIds(): string[]
  /** The requests answered so far (the last 5000), oldest first, so a test can check which routes the SDK reached and what they answered. */
  requests(): readonly AnsweredRequest[]
  /** Answer the next matching requests (`times`, default 1) with an error status, e.g. `{ route: 'POST /sandbox', status: 429, retryAfterSeconds: 5 }`. */
  failNext(options: FailNextOptions): void
  /** Refuse a create naming this target (the SDK's `target` option) with a 400 naming it. */
  rejectTarget(name: string): void
  /** Remove a sandbox's container and record as if it was deleted elsewhere; the SDK's next call on it gets a 404. */
  deleteBehindBack(idOrName: string): Promise<void>
  /** Become unreachable: destroy every open connection (follow sockets too) and every new one, so the SDK gets no response. */
  pause(): void
  /** Answer again after {@link DaytonaStandin.pause}. */
  resume(): void
  /** Cut every open follow-logs WebSocket without a close frame, as a dropped network would. */
  dropLogStreams(): void
  /** Stop listening and remove every container still there, then every image a snapshot or fork committed. */
  close(): Promise<void>
}

/** Start a stand-in server; resolves once it listens. */
export async function startDaytonaStandin(options: DaytonaStandinOptions = {}): Promise<DaytonaStandin> {
  const image = options.image ?? DAYTONA_IMAGE
  const apiKey = options.apiKey ?? 'test'
  const engine = new SandboxEngine(options.labels ?? {}, undefined, { mounts: options.mounts ?? [], hostGateway: options.hostGateway ?? false })
  const store = new SandboxStore()
  const faults = new Faults()
  let base = ''
  const answered: AnsweredRequest[] = []
  const recordAnswer = (method: string, path: string, status: number): void => {
    answered.push({ method, path, status })
    if (answered.length > REQUEST_LOG_SIZE) answered.splice(0, answered.length - REQUEST_LOG_SIZE)
  }

  const app = new Hono()
  app.onError(errorResponse)
  app.notFound((c) => errorResponse(new StandinError(404, `the stand-in has no route ${c.req.method} ${c.req.path}`), c))
  app.use('*', async (c, next) => {
    await next()
    recordAnswer(c.req.method, c.req.path, c.res.status)
  })
  app.use('*', async (c, next) => {
    if (c.req.header('authorization') !== `Bearer ${apiKey}`) throw new StandinError(401, 'Invalid credentials: the Authorization header must carry the API key as a Bearer token')
    await next()
  })
  app.use('*', faults.middleware)
  const snapshots = new SnapshotStore(engine, { default: image, [image]: image, ...options.snapshots }, 'default')
  const settings: ControlSettings = { engine, store, snapshots, toolboxProxyUrl: () => `${base}/toolbox`, rejectedTargets: faults.rejectedTargets }
  controlRoutes(app, settings)
  snapshotRoutes(app, settings)
  const links = new SignedLinks()
  previewRoutes(app, store, links, () => base)
  const sessions = new SessionStore()
  toolboxRoutes(app, engine, store, sessions)

  // The preview proxy answers under /preview/ without the API key; everything else is the app's.
  const preview = previewProxy({ engine, store, links, onAnswer: recordAnswer })
  const api = getRequestListener(app.fetch)
  const server = createServer((req, res) => {
    if (!preview(req, res)) void api(req, res)
  })
  // Every connection, so pause() can cut them all (upgraded ones included), and the accepted follow-logs sockets for dropLogStreams().
  const connections = new Set<Socket>()
  const followSockets = new Set<Duplex>()
  let paused = false
  server.on('connection', (socket: Socket) => {
    if (paused) return socket.destroy()
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
  })
  // The follow-logs socket of a session command; every other upgrade (the SDK's socket.io event channel) is refused, so the SDK polls.
  const followLogs = followLogsUpgrade(sessions, (id) => store.find(id))
  server.on('upgrade', (request, socket, head: Buffer) => {
    const status = request.headers.authorization !== `Bearer ${apiKey}` ? '401 Unauthorized' : followLogs(request, socket, head) ? undefined : '404 Not Found'
    recordAnswer('WS', (request.url ?? '/').split('?')[0]!, status ? Number(status.slice(0, 3)) : 101)
    if (!status) {
      followSockets.add(socket)
      socket.once('close', () => followSockets.delete(socket))
    } else socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy())
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
    sandboxIds: () => [...store.byId.keys()],
    requests: () => [...answered],
    failNext: (options) => faults.failNext(options),
    rejectTarget: (name) => void faults.rejectedTargets.add(name),
    async deleteBehindBack(idOrName) {
      await destroySandbox(settings, store.find(idOrName))
    },
    pause() {
      paused = true
      for (const socket of connections) socket.destroy()
    },
    resume() {
      paused = false
    },
    dropLogStreams() {
      for (const socket of followSockets) socket.destroy()
    },
    async close() {
      server.closeAllConnections()
      for (const socket of connections) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await Promise.all([...store.byId.values()].map((r) => engine.remove(r.containerId)))
      store.byId.clear()
      await snapshots.close()
    },
  }
}
