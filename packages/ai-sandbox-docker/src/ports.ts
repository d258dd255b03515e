/**
 * `handle.ports` of the Docker provider: the host reaches a container port
 * through a port published on 127.0.0.1 (`publishPorts`) when there is one,
 * on `127.0.0.1` itself with `network: 'host'`, and otherwise at the
 * container's address on its network (the Linux host routes to the bridge;
 * Docker Desktop does not, so publish ports there). It never checks that
 * anything listens.
 */
import { SandboxConfigError, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import type { SandboxPortConnection, SandboxPorts } from '@tanstack/ai-sandbox'
import { PROVIDER_NAME, engineError, operationError } from './errors.js'
import type { SandboxState } from './state.js'

/** Build the `ports` member for a sandbox on `network`. */
export function createDockerPorts(state: SandboxState, network: string): SandboxPorts {
  return {
    connect: async (port) => {
      if (network === 'none') throw new UnsupportedCapabilityError({ provider: PROVIDER_NAME, capability: 'ports', method: 'ports.connect' })
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        throw new SandboxConfigError('ports.connect.port', `Invalid option ports.connect.port: expected an integer from 1 to 65535, got ${typeof port === 'string' ? JSON.stringify(port) : String(port)}.`)
      }
      state.assertLive('ports.connect')
      if (network === 'host') return connection('127.0.0.1', port, port)
      let info
      try {
        info = await state.container.inspect()
      } catch (error) {
        throw engineError('exec-failed', 'ports.connect', error, { endpoint: state.endpoint, id: state.id })
      }
      const published = info.NetworkSettings.Ports?.[`${port}/tcp`]?.find((binding) => binding.HostPort)
      if (published) return connection(published.HostIp && published.HostIp !== '0.0.0.0' ? published.HostIp : '127.0.0.1', Number(published.HostPort), port)
      const networks = info.NetworkSettings.Networks ?? {}
      const address = networks[network]?.IPAddress || Object.values(networks).find((entry) => entry.IPAddress)?.IPAddress || (info.NetworkSettings as { IPAddress?: string }).IPAddress
      if (!address) {
        throw operationError('not-found', `ports.connect(${port}): sandbox ${state.id} has no address on network "${network}" (is the container running?). Resume it with provider.resume({ id }), or publish the port with dockerSandbox({ publishPorts: [${port}] }).`)
      }
      return connection(address, port, port)
    },
  }
}

function connection(hostname: string, hostPort: number, port: number): SandboxPortConnection {
  const host = hostname.includes(':') ? `[${hostname}]` : hostname
  return { url: `http://${host}:${hostPort}`, hostname, port }
}
