/**
 * `executeHostTool`: the host side of the co-located seam. A host route
 * (an edge orchestrator's `fetch`, a Durable Object) hands it the JSON a
 * `httpRemoteToolExecutor` sent and returns the JSON to answer with. It runs
 * the tool through the same path as the MCP core, so validation and error
 * text are identical whichever side speaks MCP. It never throws for a call;
 * authenticate the request before calling it.
 */
import { prepareToolCall, runToolCall, type BridgeableTool } from './tool-call.js'
import { ToolBridgeError } from './errors.js'
import type { ToolBridgeEvent } from './tool-bridge-core.js'
import type { ToolExecRequest, ToolExecResponse } from './remote-tools.js'

/** Options of {@link executeHostTool}. */
export interface ExecuteHostToolOptions {
  /** Aborts the running tool. */
  signal?: AbortSignal
  /** Handed to `execute` as `context.context` (`chat({ context })`). */
  context?: unknown
  /** Called for the call, the result and tool-emitted events, as on the MCP core. */
  onEvent?: (event: ToolBridgeEvent) => void
}

/**
 * Run one {@link ToolExecRequest} against `tools` on the host.
 *
 * @param tools - The chat tools; each `execute` runs with its own closures.
 * @param request - The parsed request body (validated here).
 * @param options - See {@link ExecuteHostToolOptions}.
 * @returns `{ ok: true, result }` with the tool's value, or `{ ok: false, error: { reason, message } }`
 *   with reason `unknown-tool`, `invalid-arguments` (nothing ran) or `tool-failed` (the tool threw).
 * @example
 * ```ts
 * // inside the host route, after checking the bearer token:
 * return Response.json(await executeHostTool(tools, await request.json()))
 * ```
 */
export async function executeHostTool(tools: readonly BridgeableTool[], request: ToolExecRequest, options: ExecuteHostToolOptions = {}): Promise<ToolExecResponse> {
  const toolName = typeof request?.toolName === 'string' ? request.toolName : ''
  let prepared: { tool: BridgeableTool; args: unknown }
  try {
    prepared = await prepareToolCall(tools, toolName, request?.args)
  } catch (error) {
    if (ToolBridgeError.isInstance(error) && (error.reason === 'unknown-tool' || error.reason === 'invalid-arguments')) return { ok: false, error: { reason: error.reason, message: error.message } }
    throw error
  }
  const toolCallId = typeof request.toolCallId === 'string' && request.toolCallId !== '' ? request.toolCallId : crypto.randomUUID()
  const outcome = await runToolCall(prepared.tool, prepared.args, { toolCallId, ...options })
  return outcome.isError ? { ok: false, error: { reason: 'tool-failed', message: outcome.text } } : { ok: true, result: outcome.value ?? null }
}
