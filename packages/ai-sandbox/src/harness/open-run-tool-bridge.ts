/**
 * `openRunToolBridge`: what a harness adapter calls when `chat()` gave it
 * tools. One step per concern: build the core with an event channel, pick the
 * provisioner (the app's capability, else the host transport), provision.
 * The adapter then projects `url` + `token` into its CLI, merges `chunks`
 * into its stream, and calls `close()` in a `finally`.
 * Invariant: a failed provision leaves nothing open.
 */
import type { CapabilityContext, StreamChunk } from '@tanstack/ai'
import type { SandboxHandle } from '../contracts/handle.js'
import { getToolBridgeProvisioner } from '../capabilities/tokens.js'
import { createBridgeEventChannel } from '../bridge/bridge-events.js'
import { hostToolBridgeProvisioner } from '../bridge/host-provisioner.js'
import type { ToolDescriptor } from '../bridge/remote-tools.js'
import { createToolBridgeCore } from '../bridge/tool-bridge-core.js'
import type { BridgeableTool } from '../bridge/tool-call.js'

/** Options of {@link openRunToolBridge}. */
export interface OpenRunToolBridgeOptions {
  /** The run's tools (`options.tools` in `chatStream`). */
  tools: readonly BridgeableTool[]
  /** The run's sandbox. */
  handle: SandboxHandle
  runId: string
  /** `options.capabilities` in `chatStream`: supplies an injected provisioner and `chat({ context })`. */
  capabilities?: CapabilityContext & { context?: unknown }
  /** Pick the agent's tool-use id from an MCP call's `_meta`, so bridge events match the adapter's tool-call chunks. */
  toolCallIdFrom?: (meta: Record<string, unknown>) => string | undefined
}

/** One run's bridge, as the adapter uses it. */
export interface RunToolBridge {
  /** The MCP endpoint as seen from inside the sandbox. */
  readonly url: string
  /** The per-run bearer token. */
  readonly token: string
  /** The tools it serves. */
  readonly tools: readonly ToolDescriptor[]
  /** Live `CUSTOM` chunks of bridged calls; merge with `mergeChunkStreams`. Ends after `close()`. */
  readonly chunks: AsyncIterable<StreamChunk>
  /** Whether the agent has reached the bridge at all yet (any authenticated MCP request). */
  contacted: () => boolean
  /** Close the endpoint (running tools are aborted) and end `chunks`. Idempotent. */
  close: () => Promise<void>
}

/**
 * Serve `tools` to the agent of one run.
 *
 * @param options - See {@link OpenRunToolBridgeOptions}.
 * @returns The open {@link RunToolBridge}.
 * @throws ToolBridgeError `invalid-tool` (a tool cannot be bridged), `unreachable` or
 *   `listen-failed` (from the provisioner).
 * @example
 * ```ts
 * const bridge = await openRunToolBridge({ tools: options.tools, handle, runId, capabilities: options.capabilities })
 * try { yield* mergeChunkStreams(translated, bridge.chunks) } finally { await bridge.close() }
 * ```
 */
export async function openRunToolBridge(options: OpenRunToolBridgeOptions): Promise<RunToolBridge> {
  const { tools, handle, runId, capabilities, toolCallIdFrom } = options
  const channel = createBridgeEventChannel()
  const core = createToolBridgeCore({
    tools,
    onEvent: channel.onEvent,
    ...(toolCallIdFrom ? { toolCallIdFrom } : {}),
    ...(capabilities?.context !== undefined ? { context: capabilities.context } : {}),
  })
  const provisioner = (capabilities && getToolBridgeProvisioner(capabilities, { optional: true })) ?? hostToolBridgeProvisioner()
  const provisioned = await provisioner.provision({ runId, handle, core })
  let closed: Promise<void> | undefined
  return {
    url: provisioned.url,
    token: provisioned.token,
    tools: core.tools,
    chunks: channel.stream,
    contacted: core.contacted,
    close: () => (closed ??= provisioned.close().finally(() => channel.close())),
  }
}
