/**
 * `handle.hostAccess` of the Docker provider: how a process in the container
 * reaches a server on the host. On a bridge network that is the network's
 * gateway, which is an address of the host, so a host server listens there
 * and not on every interface. The default bridge reaches it as
 * `host.docker.internal` (the provider maps that name to `host-gateway`);
 * a user-defined network by the gateway address itself. `host` networking
 * shares the host's loopback; `none` reaches nothing.
 */
import type { SandboxHostAccess } from '@tanstack/ai-sandbox'
import { engineError, operationError } from './errors.js'
import type { SandboxState } from './state.js'

/** Build the `hostAccess` member for a sandbox on `network`. */
export function createDockerHostAccess(state: SandboxState, network: string): () => Promise<SandboxHostAccess | undefined> {
  return async () => {
    state.assertLive('hostAccess')
    if (network === 'none') return undefined
    if (network === 'host') return { hostname: '127.0.0.1', listenAddress: '127.0.0.1' }
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
    return { hostname: network === 'bridge' ? 'host.docker.internal' : gateway, listenAddress: gateway }
  }
}
