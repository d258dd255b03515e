/**
 * `handle.hostAccess` of the Docker provider: how a process in the container
 * reaches a server on the host, per network kind (managed or default bridge,
 * user-defined network, `host`, `none`). `dockerHostAccess` answers the same
 * before any sandbox exists, so a host server can listen before `create`.
 * Design notes: docs/design/docker.md
 */
import Docker from 'dockerode'
import { z } from 'zod'
import type { SandboxHostAccess } from '@tanstack/ai-sandbox'
import { dockerClientFrom, endpointOf, SANDBOX_NETWORK } from './config.js'
import { engineError, operationError, parseConfig } from './errors.js'
import { runScript } from './state.js'
import type { SandboxState } from './state.js'

/** The name every sandbox on a bridge gets for the host (`ExtraHosts`, `host-gateway`). */
export const HOST_NAME = 'host.docker.internal'

/** Build the `hostAccess` member for a sandbox on `network`. */
export function createDockerHostAccess(state: SandboxState, network: string): () => Promise<SandboxHostAccess | undefined> {
  let hostGateway: Promise<string> | undefined
  return async () => {
    state.assertLive('hostAccess')
    if (network === 'none') return undefined
    if (network === 'host') return { hostname: '127.0.0.1', listenAddress: '127.0.0.1' }
    if (network === SANDBOX_NETWORK) {
      hostGateway ??= hostGatewayOf(state)
      const ensuring = hostGateway
      ensuring.catch(() => {
        if (hostGateway === ensuring) hostGateway = undefined // retried by the next call
      })
      return { hostname: HOST_NAME, listenAddress: await ensuring }
    }
    let info
    try {
      info = await state.container.inspect()
    } catch (error) {
      throw engineError('exec-failed', 'hostAccess', error, { endpoint: state.endpoint, id: state.id })
    }
    const gateway = info.NetworkSettings.Networks?.[network]?.Gateway
    if (!gateway) {
      throw operationError('not-found', `hostAccess(): sandbox ${state.id} has no gateway on network "${network}" (is the container running?). Resume it with provider.resume({ id }).`)
    }
    return { hostname: network === 'bridge' ? HOST_NAME : gateway, listenAddress: gateway }
  }
}

/** The IPv4 address `host.docker.internal` has inside the container (its `/etc/hosts`). */
async function hostGatewayOf(state: SandboxState): Promise<string> {
  const hosts = await runScript(state, 'hostAccess', 'cat /etc/hosts', [], state.user !== undefined ? { user: state.user } : {})
  for (const line of hosts.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/)
    if (address && /^\d+\.\d+\.\d+\.\d+$/.test(address) && names.includes(HOST_NAME)) return address
  }
  throw operationError('not-found', `hostAccess(): sandbox ${state.id} has no ${HOST_NAME} entry in /etc/hosts, so it cannot name the host. Does the engine know host-gateway (Docker 20.10 or later)?`)
}

/** Options of {@link dockerHostAccess}: the same `docker` and `network` as the `dockerSandbox` config the sandboxes will use. */
export interface DockerHostAccessOptions {
  /** A dockerode instance or its options. Default: `DOCKER_HOST` or `/var/run/docker.sock`. */
  docker?: Docker | Docker.DockerOptions
  /** The sandboxes' network. Default `tanstack-sandbox` (the managed network, {@link SANDBOX_NETWORK}). */
  network?: string
}

const optionsSchema = z
  .object({
    docker: z.custom<Docker | Docker.DockerOptions>((value) => typeof value === 'object' && value !== null, { message: 'expected a dockerode instance or its options' }).optional(),
    network: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, `expected '${SANDBOX_NETWORK}' (the default), 'bridge', 'none', 'host' or a network name`).optional(),
  })
  .strict()

/**
 * How a sandbox of `dockerSandbox({ docker, network })` will reach a server on
 * this machine, before any sandbox exists: what `handle.hostAccess()` of such
 * a sandbox returns. Listen on `listenAddress` (not on every interface) and
 * give the agent `hostname`:
 * - the managed network (default) and `bridge`: `host.docker.internal`, at the
 *   default bridge's gateway (`172.17.0.1` on a default engine), which is where
 *   the engine's `host-gateway` points unless its `host-gateway-ip` setting
 *   says otherwise;
 * - a user-defined network: its gateway, as hostname and listen address;
 * - `host`: `127.0.0.1`; `none`: `undefined` (no network).
 * With Docker Desktop or a remote engine the address belongs to the engine's
 * machine, not this one, and a listen on it fails with `EADDRNOTAVAIL`: listen
 * on `0.0.0.0` there.
 *
 * @param options - See {@link DockerHostAccessOptions}.
 * @returns `{ hostname, listenAddress }`, or `undefined` for `network: 'none'`.
 * @throws SandboxConfigError naming the field for invalid options.
 * @throws SandboxOperationError `not-found` when the network does not exist (a user-defined one) or has no IPv4 gateway; `exec-failed` when the engine does not answer.
 * @example
 * ```ts
 * const access = (await dockerHostAccess())!
 * server.listen(0, access.listenAddress) // the agent calls http://host.docker.internal:<port>
 * ```
 */
export async function dockerHostAccess(options: DockerHostAccessOptions = {}): Promise<SandboxHostAccess | undefined> {
  const parsed = parseConfig(optionsSchema, options, 'dockerHostAccess')
  const network = parsed.network ?? SANDBOX_NETWORK
  if (network === 'none') return undefined
  if (network === 'host') return { hostname: '127.0.0.1', listenAddress: '127.0.0.1' }
  const docker = dockerClientFrom(parsed.docker, (config) => new Docker(config))
  const endpoint = endpointOf(docker)
  // The managed network maps host.docker.internal to host-gateway, the default bridge's gateway: read that one.
  const inspected = network === SANDBOX_NETWORK ? 'bridge' : network
  let info: { IPAM?: { Config?: { Gateway?: string; Subnet?: string }[] | null } }
  try {
    info = (await docker.getNetwork(inspected).inspect()) as typeof info
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) {
      throw operationError('not-found', `dockerHostAccess(): the network "${inspected}" does not exist on the engine at ${endpoint}. Create it (docker network create ${inspected}), or pass the network your sandboxes use.`, error)
    }
    throw engineError('exec-failed', 'dockerHostAccess', error, { endpoint })
  }
  const gateway = (info.IPAM?.Config ?? []).map((config) => config.Gateway ?? firstAddress(config.Subnet)).find((address) => address !== undefined && /^\d+\.\d+\.\d+\.\d+$/.test(address))
  if (!gateway) throw operationError('not-found', `dockerHostAccess(): the network "${inspected}" on ${endpoint} has no IPv4 gateway, so a sandbox on it cannot name the host. Use a bridge network.`)
  return { hostname: network === SANDBOX_NETWORK || network === 'bridge' ? HOST_NAME : gateway, listenAddress: gateway }
}

/** `172.17.0.0/16` → `172.17.0.1` (the address a bridge takes when the engine reports only the subnet, as Docker 20.10 does); `undefined` for anything but IPv4. */
function firstAddress(subnet: string | undefined): string | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)\.(\d+)\/\d+$/.exec(subnet ?? '')
  if (!match) return undefined
  const value = ((Number(match[1]) << 24) | (Number(match[2]) << 16) | (Number(match[3]) << 8) | Number(match[4])) + 1
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.')
}
