/**
 * The sandbox side of the co-located seam: only tool EXECUTION crosses back to
 * the host. `toolDescriptors`, `remoteToolStubs` and `httpRemoteToolExecutor`.
 * Invariant: descriptors carry no code and no closure, only name, description,
 * schema. Design notes: docs/design/bridge.md
 */
import { ToolBridgeError, type ToolBridgeErrorReason } from './errors.js'
import { toolJsonSchema, type BridgeableTool, type JsonSchemaObject } from './tool-call.js'

/** A tool as the sandbox side knows it: JSON only. */
export interface ToolDescriptor {
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments (`type: 'object'`). */
  readonly inputSchema: JsonSchemaObject
}

/** One execution the sandbox asks the host for. JSON-serialisable. */
export interface ToolExecRequest {
  toolName: string
  args: unknown
  /** The agent's id for the call, when known. */
  toolCallId?: string
}

/** The host's answer to a {@link ToolExecRequest}. JSON-serialisable. */
export type ToolExecResponse =
  | { ok: true; result: unknown }
  | { ok: false; error: { reason: Extract<ToolBridgeErrorReason, 'unknown-tool' | 'invalid-arguments' | 'tool-failed'>; message: string } }

/** Runs one tool on the host, wherever that is. Rejects with ToolBridgeError. */
export type RemoteToolExecutor = (request: ToolExecRequest, options?: { signal?: AbortSignal }) => Promise<unknown>

/**
 * Describe `tools` for the sandbox side.
 * @param tools - Chat tools (`inputSchema` a JSON Schema or a Standard Schema).
 * @returns One descriptor per tool, in order.
 * @throws ToolBridgeError `invalid-tool` when a name or schema cannot be bridged.
 * @example
 * ```ts
 * const descriptors = toolDescriptors([weatherTool]) // send as JSON to the sandbox
 * ```
 */
export function toolDescriptors(tools: readonly BridgeableTool[]): ToolDescriptor[] {
  const seen = new Set<string>()
  return tools.map((tool) => {
    if (seen.has(tool.name)) throw new ToolBridgeError('invalid-tool', `Two tools are named "${tool.name}"; tool names must be unique.`, { toolName: tool.name })
    seen.add(tool.name)
    return { name: tool.name, description: tool.description ?? '', inputSchema: toolJsonSchema(tool) }
  })
}

/**
 * Tools for the sandbox side whose `execute` forwards to `executor`.
 * Feed them to `createToolBridgeCore` inside the sandbox.
 * @param descriptors - From {@link toolDescriptors}.
 * @param executor - For example {@link httpRemoteToolExecutor}.
 * @returns Tools with the descriptors' names, descriptions and JSON Schemas.
 * @example
 * ```ts
 * const core = createToolBridgeCore({ tools: remoteToolStubs(descriptors, httpRemoteToolExecutor({ url, token })) })
 * ```
 */
export function remoteToolStubs(descriptors: readonly ToolDescriptor[], executor: RemoteToolExecutor): BridgeableTool[] {
  return descriptors.map((descriptor) => ({
    name: descriptor.name,
    description: descriptor.description,
    inputSchema: descriptor.inputSchema,
    execute: (args: unknown, context?: { toolCallId?: string; abortSignal?: AbortSignal }) =>
      executor({ toolName: descriptor.name, args, ...(context?.toolCallId ? { toolCallId: context.toolCallId } : {}) }, context?.abortSignal ? { signal: context.abortSignal } : {}),
  }))
}

/** Options of {@link httpRemoteToolExecutor}. */
export interface HttpRemoteToolExecutorOptions {
  /** The host route that answers with `executeHostTool`, e.g. `https://orchestrator.example/runs/r1/tools`. */
  url: string
  /** Sent as `Authorization: Bearer <token>`. */
  token: string
  /** The fetch to use (e.g. a Durable Object stub's). Default: global `fetch`. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>
}

/**
 * An executor that POSTs each {@link ToolExecRequest} as JSON to `url` and
 * expects a {@link ToolExecResponse}.
 * @returns A {@link RemoteToolExecutor}: resolves with the tool's value, rejects with
 *   ToolBridgeError `tool-failed` (the tool threw), `unknown-tool`, `invalid-arguments`,
 *   or `remote-failed` (HTTP status not 200, or not a ToolExecResponse).
 * @example
 * ```ts
 * const executor = httpRemoteToolExecutor({ url: process.env.TOOLS_URL!, token: process.env.TOOLS_TOKEN! })
 * ```
 */
export function httpRemoteToolExecutor(options: HttpRemoteToolExecutorOptions): RemoteToolExecutor {
  const send = options.fetch ?? ((input: string, init: RequestInit) => fetch(input, init))
  return async (request, { signal } = {}) => {
    let response: Response
    try {
      response = await send(options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.token}` },
        body: JSON.stringify(request),
        ...(signal ? { signal } : {}),
      })
    } catch (error) {
      throw new ToolBridgeError('remote-failed', `Tool "${request.toolName}": the host at ${options.url} could not be reached (${String(error)}).`, { toolName: request.toolName, cause: error })
    }
    const body = (await response.json().catch(() => undefined)) as ToolExecResponse | undefined
    if (response.status !== 200 || typeof body?.ok !== 'boolean') {
      throw new ToolBridgeError('remote-failed', `Tool "${request.toolName}": the host answered HTTP ${response.status} without a tool result${response.status === 401 ? ' (check the token)' : ''}.`, { toolName: request.toolName })
    }
    if (body.ok) return body.result
    throw new ToolBridgeError(body.error.reason, body.error.message, { toolName: request.toolName })
  }
}
