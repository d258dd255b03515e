/**
 * `handle.ports` of the Cloudflare provider: a sandbox port is reached
 * through a preview URL (`exposePort` under the configured custom domain),
 * which the app's Worker routes to the container with the SDK's
 * `proxyToSandbox`. Cloudflare refuses ports below 1024 and 3000 (its
 * control server), and a URL goes stale after a restart, so `connect`
 * always asks `exposePort` again.
 */
import type { SandboxPorts } from '@tanstack/ai-sandbox'
import { SandboxConfigError, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import { PROVIDER_NAME } from './errors.js'
import type { SandboxState } from './state.js'

/** The control server's port inside every container, which cannot be exposed. */
export const CONTROL_PORT = 3000

/** Build the `ports` member of a handle. */
export function createCloudflarePorts(state: SandboxState): SandboxPorts {
  return {
    connect: async (port) => {
      state.assertLive('ports.connect')
      const hostname = state.config.previewHostname
      if (!hostname) {
        throw new UnsupportedCapabilityError({
          provider: PROVIDER_NAME,
          capability: 'ports',
          method: 'ports.connect',
          hint: 'Preview URLs need a custom domain: pass cloudflareSandbox({ previewHostname: "sandbox.example.com" }) with a *.sandbox.example.com/* route to the Worker, and call proxyToSandbox(request, env) first in its fetch.',
        })
      }
      if (!Number.isInteger(port) || port < 1024 || port > 65535 || port === CONTROL_PORT) {
        throw new SandboxConfigError(
          'ports.connect.port',
          `Invalid option ports.connect.port: Cloudflare exposes ports 1024-65535 except ${CONTROL_PORT} (the sandbox's control server), got ${typeof port === 'string' ? JSON.stringify(port) : String(port)}. Let the server listen on another port, e.g. 8080.`,
        )
      }
      const url = await state.toolbox.expose(port, hostname, `ports.connect(${port})`)
      return { url, hostname: new URL(url).hostname, port }
    },
  }
}
