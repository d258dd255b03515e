/**
 * `handle.ports` of the Daytona provider: a sandbox port is reached through
 * Daytona's preview proxy. A public sandbox's standard link works as is; a
 * private sandbox's link needs a token header nothing but our code could
 * send, so `connect` returns a signed preview URL instead (the token is in
 * the URL, bound to the port, valid for `PREVIEW_URL_TTL_SECONDS`).
 */
import type { SandboxPorts } from '@tanstack/ai-sandbox'
import { SandboxConfigError, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import { apiError, PROVIDER_NAME } from './errors.js'
import type { SandboxState } from './state.js'

/** How long a signed preview URL stays valid, in seconds (1 hour). */
export const PREVIEW_URL_TTL_SECONDS = 3600

/** Build the `ports` member of a handle; `enabled` false (network blocked) refuses every port. */
export function createDaytonaPorts(state: SandboxState, enabled: boolean): SandboxPorts {
  return {
    connect: async (port) => {
      state.assertLive('ports.connect')
      if (!enabled) {
        throw new UnsupportedCapabilityError({ provider: PROVIDER_NAME, capability: 'ports', method: 'ports.connect', hint: 'The sandbox was created with networkBlockAll, so the provider reports no preview access. Create it without networkBlockAll to reach its ports.' })
      }
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        throw new SandboxConfigError('ports.connect.port', `Invalid option ports.connect.port: expected an integer from 1 to 65535, got ${typeof port === 'string' ? JSON.stringify(port) : String(port)}.`)
      }
      let url: string
      try {
        url = state.sandbox.public ? (await state.sandbox.getPreviewLink(port)).url : (await state.sandbox.getSignedPreviewUrl(port, PREVIEW_URL_TTL_SECONDS)).url
      } catch (error) {
        throw apiError('exec-failed', `ports.connect(${port})`, error, state.id)
      }
      return { url, hostname: new URL(url).hostname, port }
    },
  }
}
