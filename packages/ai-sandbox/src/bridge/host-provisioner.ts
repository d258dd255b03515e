/**
 * `hostToolBridgeProvisioner`: the default `ToolBridgeProvisioner`. It asks
 * the sandbox how its processes reach the host (`handle.hostAccess()`),
 * listens there with `startHostToolBridge`, and gives the agent the URL under
 * the host name the sandbox uses. It never chooses by provider name.
 */
import { ToolBridgeError } from './errors.js'
import { startHostToolBridge, TOOL_BRIDGE_PATH } from './host-tool-bridge.js'
import type { ToolBridgeProvisioner } from './provisioner.js'

/**
 * The host transport as a provisioner: one node:http listener per run, on
 * the address from `handle.hostAccess()` (loopback for local-process, the
 * Docker bridge's gateway for a bridged container), closed with the run.
 *
 * @returns A {@link ToolBridgeProvisioner}.
 * @throws ToolBridgeError (from `provision`) `unreachable` when the handle has no
 *   `hostAccess` or reports the host unreachable (Docker `network: 'none'`);
 *   `listen-failed` when the address cannot be bound.
 * @example
 * ```ts
 * const bridge = await hostToolBridgeProvisioner().provision({ runId, handle, core })
 * try { ... } finally { await bridge.close() }
 * ```
 */
export function hostToolBridgeProvisioner(): ToolBridgeProvisioner {
  return {
    provision: async ({ handle, core }) => {
      const access = handle.hostAccess ? await handle.hostAccess() : undefined
      if (!access) {
        const why = handle.hostAccess ? 'reports that its processes cannot reach the host (it has no network, or runs elsewhere, such as a cloud sandbox)' : 'does not say how its processes reach the host (handle.hostAccess)'
        throw new ToolBridgeError(
          'unreachable',
          `The tool bridge cannot serve chat() tools to sandbox ${handle.id}: the "${handle.provider}" sandbox ${why}. Give the sandbox a network that reaches the host, or inject a ToolBridgeProvisioner with provideToolBridgeProvisioner (routedToolBridge serves the bridge under a URL a remote sandbox can reach).`,
        )
      }
      const bridge = await startHostToolBridge({ core, host: access.listenAddress })
      const host = access.hostname.includes(':') ? `[${access.hostname}]` : access.hostname
      return { url: `http://${host}:${bridge.port}${TOOL_BRIDGE_PATH}`, token: bridge.token, close: bridge.close }
    },
  }
}
