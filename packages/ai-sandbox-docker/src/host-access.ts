/**
 * `handle.hostAccess` of the Docker provider: how a process in the container
 * reaches a server on the host. On a bridge network that is an address of
 * the host on the container's side, so a host server listens there and not
 * on every interface:
 * - the managed `tanstack-sandbox` network (the default) and the default
 *   bridge: `host.docker.internal`, which the provider maps to
 *   `host-gateway` (the default bridge's host address, `172.17.0.1` on a
 *   default engine); the host listens on the address that name has in the
 *   container's `/etc/hosts`, read once per handle. The default bridge's
 *   gateway is that same address.
 * - a user-defined network: its gateway address, as hostname and listen address.
 * - `host`: the host's loopback; `none`: nothing (`undefined`).
 */
import type { SandboxHostAccess } from '@tanstack/ai-sandbox'
import { SANDBOX_NETWORK } from './config.js'
import { engineError, operationError } from './errors.js'
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
