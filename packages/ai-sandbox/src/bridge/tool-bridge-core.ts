/**
 * `createToolBridgeCore`: the transport-free heart of the tool bridge. It holds
 * the chat tools, lists them as MCP tools, runs calls through the shared path
 * and reports each as a {@link ToolBridgeEvent}. Invariant: a refused call
 * throws and runs nothing; a call that ran never throws (`isError` result).
 * Design notes: docs/design/bridge.md
 */
import { randomUUID } from 'node:crypto'
import { TOOL_BRIDGE_SERVER_NAME } from './server-name.js'
import { prepareToolCall, runToolCall, type BridgeableTool } from './tool-call.js'
import { toolDescriptors, type ToolDescriptor } from './remote-tools.js'

/** What the core reports while calls run; transports turn these into `CUSTOM` chunks. */
export type ToolBridgeEvent =
  /** A validated call is about to run on the host. */
  | { readonly type: 'call'; readonly toolCallId: string; readonly toolName: string; readonly input: unknown }
  /** The call finished: `content` is what the agent receives (the error message when `isError`). */
  | { readonly type: 'result'; readonly toolCallId: string; readonly toolName: string; readonly isError: boolean; readonly content: string }
  /** The tool called `context.emitCustomEvent(name, value)` while running. */
  | { readonly type: 'custom'; readonly toolCallId: string; readonly toolName: string; readonly name: string; readonly value: Record<string, any> }

/** An MCP `tools/call` result. */
export interface ToolBridgeCallResult {
  content: { type: 'text'; text: string }[]
  isError?: boolean
  [key: string]: unknown
}

/** One `tools/call` as the core receives it. */
export interface ToolBridgeCall {
  /** The MCP tool name (the chat tool's name). */
  name: string
  arguments?: unknown
  /** The request's `_meta` (harnesses put their tool-use id here). */
  meta?: Record<string, unknown>
  /** Aborts the running tool (client gone, bridge closing). */
  signal?: AbortSignal
}

/** Options of {@link createToolBridgeCore}. */
export interface ToolBridgeCoreOptions {
  /** The tools to expose; each `execute` runs on the host with its own closures. */
  tools: readonly BridgeableTool[]
  /** Called synchronously for every call, result and tool-emitted event. Must not throw. */
  onEvent?: (event: ToolBridgeEvent) => void
  /** Pick the agent's id for a call from the request's `_meta` (e.g. a harness's tool-use id). Default: a fresh UUID. */
  toolCallIdFrom?: (meta: Record<string, unknown>) => string | undefined
  /** Request-local application state handed to `execute` as `context.context` (`chat({ context })`). */
  context?: unknown
  /** The server name reported on `initialize`. Default {@link TOOL_BRIDGE_SERVER_NAME} (`tanstack`). */
  name?: string
}

/** The transport-free bridge. */
export interface ToolBridgeCore {
  /** The server name reported on `initialize`. */
  readonly name: string
  /** The tools as MCP lists them (name, description, JSON Schema). */
  readonly tools: readonly ToolDescriptor[]
  /**
   * Run one call.
   * @throws ToolBridgeError `unknown-tool` or `invalid-arguments` (nothing ran).
   */
  callTool: (call: ToolBridgeCall) => Promise<ToolBridgeCallResult>
  /** Record that an authenticated MCP request reached the bridge (transports call it; `handleBridgeJsonRpc` does). */
  noteRequest: () => void
  /** Whether any authenticated MCP request has reached the bridge yet: false means the agent never connected. */
  contacted: () => boolean
}

/**
 * Create the bridge core over `tools`.
 *
 * @param options - See {@link ToolBridgeCoreOptions}.
 * @returns A {@link ToolBridgeCore}; serve it with `handleBridgeJsonRpc` or `startHostToolBridge`.
 * @throws ToolBridgeError `invalid-tool` when a tool's name or input schema cannot be bridged.
 * @example
 * ```ts
 * const core = createToolBridgeCore({ tools: [weatherTool], onEvent: (e) => console.log(e.type) })
 * const bridge = await startHostToolBridge({ core })
 * ```
 */
export function createToolBridgeCore(options: ToolBridgeCoreOptions): ToolBridgeCore {
  const { tools, onEvent, toolCallIdFrom, context } = options
  const descriptors = toolDescriptors(tools)
  let requests = 0
  return {
    noteRequest: () => void requests++,
    contacted: () => requests > 0,
    name: options.name ?? TOOL_BRIDGE_SERVER_NAME,
    tools: descriptors,
    callTool: async (call) => {
      const prepared = await prepareToolCall(tools, call.name, call.arguments)
      const toolCallId = (call.meta && toolCallIdFrom?.(call.meta)) || randomUUID()
      const outcome = await runToolCall(prepared.tool, prepared.args, { toolCallId, ...(call.signal ? { signal: call.signal } : {}), context, ...(onEvent ? { onEvent } : {}) })
      return { content: [{ type: 'text', text: outcome.text }], ...(outcome.isError ? { isError: true } : {}) }
    },
  }
}
