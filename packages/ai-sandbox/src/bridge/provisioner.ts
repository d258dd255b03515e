/**
 * The `ToolBridgeProvisioner` contract: how one run's bridge core is made
 * reachable from inside its sandbox. The default serves it from a node:http
 * listener on the host (`hostToolBridgeProvisioner`); an app injects another
 * through `ToolBridgeProvisionerCapability`, e.g. an edge orchestrator that
 * serves the core from its own `fetch` handler with `handleBridgeJsonRpc`.
 * Invariant: whatever `provision` opens, `close` shuts, and nothing else does.
 */
import type { SandboxHandle } from '../contracts/handle.js'
import type { ToolBridgeCore } from './tool-bridge-core.js'

/** What a provisioner gets for one run. */
export interface ToolBridgeProvisionInput {
  /** The run the bridge serves. */
  readonly runId: string
  /** The run's sandbox: where the agent runs, and so where the URL must work from. */
  readonly handle: SandboxHandle
  /** The core to serve (tools, validation, events). */
  readonly core: ToolBridgeCore
}

/** A bridge endpoint the agent inside the sandbox can call. */
export interface ProvisionedToolBridge {
  /** URL of the MCP endpoint as seen from inside the sandbox. */
  readonly url: string
  /** Per-run bearer token the agent must send (`Authorization: Bearer <token>`). */
  readonly token: string
  /** Stop serving; resolves when the endpoint is closed. Called once, when the run ends. */
  close: () => Promise<void>
}

/** Makes a bridge core reachable for one run. */
export interface ToolBridgeProvisioner {
  /**
   * Serve `input.core` for the run.
   * @throws ToolBridgeError `unreachable` or `listen-failed` when it cannot.
   */
  provision: (input: ToolBridgeProvisionInput) => Promise<ProvisionedToolBridge>
}
