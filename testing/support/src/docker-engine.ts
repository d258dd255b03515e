/**
 * The Docker engine gate shared by every Docker suite (the Docker provider's
 * own and the end-to-end ones): talk to the Engine API over `DOCKER_HOST` or
 * its unix socket (no client library), say why a suite cannot run (engine,
 * image or, for a container that must reach the host, the bridge missing),
 * find the host address a bridged container reaches as `host.docker.internal`,
 * and list what carries a suite's run label. Under REQUIRE_DOCKER=1 a missing
 * engine is a failure.
 */
import { request } from 'node:http'
import { createServer } from 'node:net'
import { describe, it } from 'vitest'

/** The engine socket used when `DOCKER_HOST` is not set. */
export const DOCKER_SOCKET = '/var/run/docker.sock'

/** The Debian image `scripts/docker/images.sh` builds (TANSTACK_SANDBOX_DEBIAN_IMAGE names another). */
export const DEBIAN_IMAGE = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
/** The BusyBox image `scripts/docker/images.sh` builds (TANSTACK_SANDBOX_BUSYBOX_IMAGE names another). */
export const BUSYBOX_IMAGE = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'

/** Where the engine answers, as the reasons name it: `DOCKER_HOST`, or the default socket. */
const ENDPOINT = process.env.DOCKER_HOST ?? DOCKER_SOCKET

/** `DOCKER_HOST` as `http.request` options: `unix://<path>` is a socket, `tcp://<host>:<port>` plain HTTP. */
export function endpointOptions(): { socketPath: string } | { host: string; port: number } {
  const tcp = /^tcp:\/\/([^:/]+):(\d+)\/?$/.exec(ENDPOINT)
  if (tcp) return { host: tcp[1]!, port: Number(tcp[2]) }
  return { socketPath: ENDPOINT.replace(/^unix:\/\//, '') }
}

/** GET an Engine API path. */
export function engine(path: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request({ ...endpointOptions(), path, timeout: 5000 }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text.startsWith('[') || text.startsWith('{') ? JSON.parse(text) : text }))
    })
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')))
    req.on('error', reject)
    req.end()
  })
}

/**
 * The address of this host on Docker's default bridge (`172.17.0.1` on a
 * default engine): what `host.docker.internal` (`host-gateway`) resolves to
 * inside a bridged container, and so the address a host server must listen
 * on for such a container, without listening on every interface. The engine
 * reports the bridge's gateway, or (20.10) only its subnet, whose first
 * address the bridge then has; a trial bind proves the address is this
 * machine's (`os.networkInterfaces()` omits a bridge with no container attached).
 * @returns The IPv4 address, or `undefined` when it is not an address of this machine (a remote engine, Docker Desktop).
 */
export async function bridgeHostAddress(): Promise<string | undefined> {
  const { status, body } = await engine('/networks/bridge')
  if (status !== 200) return undefined
  const configs = (body.IPAM?.Config ?? []) as { Gateway?: string; Subnet?: string }[]
  const candidates = configs.map((c) => c.Gateway ?? firstAddress(c.Subnet)).filter((a): a is string => a !== undefined)
  for (const address of candidates) if (await canListen(address)) return address
  return undefined
}

/** `172.17.0.0/16` → `172.17.0.1`; `undefined` for anything but an IPv4 subnet. */
function firstAddress(subnet: string | undefined): string | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/\d+$/.exec(subnet ?? '')
  if (!match) return undefined
  const value = ((Number(match[1]) << 24) | (Number(match[2]) << 16) | (Number(match[3]) << 8) | Number(match[4])) + 1
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.')
}

/** Whether a server can listen on `address` (a free port), i.e. it is an address of this machine. */
function canListen(address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(0, address, () => server.close(() => resolve(true)))
  })
}

/**
 * Why the suite cannot run, or `null`: the engine not answering, one of
 * `images` missing, or (unless `needsBridge` is false) no bridge address on
 * this machine for a container to reach a server of the test's.
 */
export async function dockerMissing(images: readonly string[], options: { needsBridge?: boolean } = {}): Promise<string | null> {
  try {
    await engine('/_ping')
  } catch (error) {
    return `docker engine not answering on ${ENDPOINT} (${(error as Error).message}); start it with scripts/docker/engine.sh`
  }
  for (const image of images) {
    if ((await engine(`/images/${encodeURIComponent(image)}/json`)).status !== 200) return `docker image ${image} not found on ${ENDPOINT}; build it with scripts/docker/images.sh`
  }
  if (options.needsBridge !== false && (await bridgeHostAddress()) === undefined) return "docker's default bridge has no address on this machine (remote engine or --bridge=none), so a container cannot reach the fake model"
  return null
}

/**
 * Register `body` when everything is there; otherwise a skip naming the
 * missing part, or (REQUIRE_DOCKER=1) a failing test saying so.
 */
export function describeWithDocker(title: string, reason: string | null, body: () => void): void {
  if (reason === null) {
    describe(title, body)
  } else if (process.env.REQUIRE_DOCKER !== '1') {
    describe(title, () => it.skip(`skipped — ${reason}`, () => undefined))
  } else {
    describe(title, () =>
      it(`needs the Docker engine (REQUIRE_DOCKER=1): ${reason}`, () => {
        throw new Error(`REQUIRE_DOCKER=1 but ${reason}`)
      }),
    )
  }
}

const filters = (label: string) => encodeURIComponent(JSON.stringify({ label: [label] }))

/** Containers, images and volumes carrying `label` (`key=value`). */
export async function dockerLeftovers(label: string): Promise<{ containers: string[]; images: string[]; volumes: string[] }> {
  const [containers, images, volumes] = await Promise.all([
    engine(`/containers/json?all=1&filters=${filters(label)}`),
    engine(`/images/json?all=1&filters=${filters(label)}`),
    engine(`/volumes?filters=${filters(label)}`),
  ])
  return { containers: containers.body.map((c: { Id: string }) => c.Id), images: images.body.map((i: { Id: string }) => i.Id), volumes: (volumes.body.Volumes ?? []).map((v: { Name: string }) => v.Name) }
}

/** True while a container with this id exists (running or not). */
export const containerExists = async (id: string): Promise<boolean> => (await engine(`/containers/${id}/json`)).status === 200
