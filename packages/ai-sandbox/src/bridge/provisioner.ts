/**
 * The seam through which an application chooses how host tools reach the
 * agent inside a sandbox. The contract lives here; the default node:http
 * transport arrives with the tool bridge.
 */
import type { SandboxHandle } from '../contracts/handle.js'

/** A bridge endpoint the agent inside the sandbox can call. */
export interface ProvisionedToolBridge {
  /** URL of the MCP endpoint as seen from inside the sandbox. */
  readonly url: string
  /** Per-run bearer token the agent must send. */
  readonly token: string
  /** Stop serving; resolves when the endpoint is closed. */
  close: () => Promise<void>
}

/** Starts a tool-bridge endpoint for one run. */
export interface ToolBridgeProvisioner {
  provision: (input: {
    runId: string
    handle: SandboxHandle
    /** Names of the tools to expose. */
    toolNames: readonly string[]
    /** Runs one tool call on the host and returns its result. */
    execute: (toolName: string, args: unknown) => Promise<unknown>
  }) => Promise<ProvisionedToolBridge>
}
