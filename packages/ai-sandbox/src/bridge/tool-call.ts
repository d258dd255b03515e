/**
 * The one path by which the bridge runs a host tool: find it by name, check
 * the arguments against its input schema, call its own `execute` (so its
 * closures, database handles and secrets are the app's), and turn the value
 * into text for the agent. Shared by the MCP core and `executeHostTool`.
 * Invariant: nothing runs unless the tool exists and the arguments validated.
 */
import { convertSchemaToJsonSchema, isStandardSchema } from '@tanstack/ai'
import { z } from 'zod'
import { ToolBridgeError } from './errors.js'
import type { ToolBridgeEvent } from './tool-bridge-core.js'

/**
 * What the bridge needs of a chat tool: `@tanstack/ai`'s `Tool` fits. Its
 * `inputSchema` is a JSON Schema object (what `chat()` hands adapters) or a
 * Standard Schema such as a zod object.
 */
export interface BridgeableTool {
  readonly name: string
  readonly description: string
  readonly inputSchema?: unknown
  readonly execute?: (args: any, context?: any) => unknown
}

/** A JSON Schema object (an MCP tool's `inputSchema` has `type: 'object'`). */
export type JsonSchemaObject = { type: 'object'; [key: string]: unknown }

/** What a running tool may use besides its arguments (a subset of `@tanstack/ai`'s `ToolExecutionContext`). */
export interface BridgeToolContext {
  toolCallId: string
  /** Aborts when the call is cancelled or the bridge closes. */
  abortSignal?: AbortSignal
  /** `chat({ context })`: request-local application state, when the caller has it. */
  context?: unknown
  /** Emit a `CUSTOM` event from inside the tool (forwarded into the run's stream). */
  emitCustomEvent: (eventName: string, value: Record<string, any>) => void
}

/** The outcome of one call: the agent-facing text, and whether the tool failed. */
export interface ToolCallOutcome {
  readonly isError: boolean
  /** The tool's value as text (a string as is, anything else as JSON), or the error message. */
  readonly text: string
  /** The tool's return value (absent when it threw). */
  readonly value?: unknown
}

type Validate = (args: unknown) => Promise<{ ok: true; value: unknown } | { ok: false; message: string }>

const validators = new WeakMap<object, Validate>()
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * The JSON Schema the agent is shown for `tool`.
 * @throws ToolBridgeError `invalid-tool` when the schema is not an object schema.
 */
export function toolJsonSchema(tool: BridgeableTool): JsonSchemaObject {
  if (!TOOL_NAME.test(tool.name)) {
    throw new ToolBridgeError('invalid-tool', `Tool name ${JSON.stringify(tool.name)} cannot be bridged: use 1-64 letters, digits, "_" or "-".`, { toolName: tool.name })
  }
  if (tool.inputSchema === undefined) return { type: 'object', properties: {} }
  const schema = (isStandardSchema(tool.inputSchema) ? convertSchemaToJsonSchema(tool.inputSchema as never) : tool.inputSchema) as Record<string, unknown> | undefined
  if (!schema || schema.type !== 'object') {
    throw new ToolBridgeError('invalid-tool', `Tool "${tool.name}" cannot be bridged: its inputSchema must describe an object (JSON Schema type "object", or a zod object).`, { toolName: tool.name })
  }
  return schema as JsonSchemaObject
}

/**
 * Build (once per tool) the validator of its arguments: the tool's own
 * Standard Schema when it has one, else its JSON Schema through zod.
 * @throws ToolBridgeError `invalid-tool` when zod cannot read the JSON Schema.
 */
export function toolValidator(tool: BridgeableTool): Validate {
  const known = validators.get(tool)
  if (known) return known
  let validate: Validate
  if (isStandardSchema(tool.inputSchema)) {
    const standard = tool.inputSchema as { '~standard': { validate: (value: unknown) => unknown } }
    validate = async (args) => {
      const result = (await standard['~standard'].validate(args)) as { value?: unknown; issues?: readonly { message: string; path?: readonly unknown[] }[] }
      return result.issues ? { ok: false, message: issueText(result.issues) } : { ok: true, value: result.value }
    }
  } else {
    let schema: z.ZodType
    try {
      schema = z.fromJSONSchema(toolJsonSchema(tool) as never)
    } catch (error) {
      throw new ToolBridgeError('invalid-tool', `Tool "${tool.name}" cannot be bridged: its JSON Schema could not be read (${(error as Error).message}). Simplify the schema or give the tool a zod inputSchema.`, { toolName: tool.name, cause: error })
    }
    validate = async (args) => {
      const result = schema.safeParse(args)
      return result.success ? { ok: true, value: result.data } : { ok: false, message: issueText(result.error.issues) }
    }
  }
  validators.set(tool, validate)
  return validate
}

/**
 * Find `name` in `tools` and validate `args` against its schema.
 * @returns The tool and the validated arguments (defaults applied).
 * @throws ToolBridgeError `unknown-tool` or `invalid-arguments`.
 */
export async function prepareToolCall(tools: readonly BridgeableTool[], name: string, args: unknown): Promise<{ tool: BridgeableTool; args: unknown }> {
  const tool = tools.find((candidate) => candidate.name === name)
  if (!tool) {
    const names = tools.map((t) => t.name).join(', ') || 'none'
    throw new ToolBridgeError('unknown-tool', `Unknown tool "${name}". This bridge exposes: ${names}.`, { toolName: name })
  }
  const checked = await toolValidator(tool)(args ?? {})
  if (!checked.ok) throw new ToolBridgeError('invalid-arguments', `Invalid arguments for tool "${name}": ${checked.message}`, { toolName: name })
  return { tool, args: checked.value }
}

/** Run a prepared tool with its own `execute`. A throw becomes an error outcome, never a rejection. */
export async function invokeTool(tool: BridgeableTool, args: unknown, context: BridgeToolContext): Promise<ToolCallOutcome> {
  try {
    if (typeof tool.execute !== 'function') throw new Error(`Tool "${tool.name}" has no execute() on the host, so the bridge cannot run it.`)
    const value = await tool.execute(args, context)
    return { isError: false, text: resultText(value), value }
  } catch (error) {
    return { isError: true, text: error instanceof Error ? error.message : String(error) }
  }
}

/** Where a call runs: its id, cancellation, runtime context and event sink. */
export interface ToolCallRun {
  toolCallId: string
  signal?: AbortSignal
  context?: unknown
  onEvent?: (event: ToolBridgeEvent) => void
}

/** Run a prepared call and report it: `call`, any `custom` events the tool emits, then `result`. */
export async function runToolCall(tool: BridgeableTool, args: unknown, run: ToolCallRun): Promise<ToolCallOutcome> {
  const { toolCallId, onEvent } = run
  const toolName = tool.name
  onEvent?.({ type: 'call', toolCallId, toolName, input: args })
  const outcome = await invokeTool(tool, args, {
    toolCallId,
    ...(run.signal ? { abortSignal: run.signal } : {}),
    ...(run.context !== undefined ? { context: run.context } : {}),
    emitCustomEvent: (name, value) => onEvent?.({ type: 'custom', toolCallId, toolName, name, value }),
  })
  onEvent?.({ type: 'result', toolCallId, toolName, isError: outcome.isError, content: outcome.text })
  return outcome
}

/** A tool's value as the text an agent reads: a string as is, `undefined` as empty, anything else as JSON. */
export function resultText(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined) return ''
  return JSON.stringify(value) ?? String(value)
}

function issueText(issues: readonly { message: string; path?: readonly unknown[] }[]): string {
  return issues
    .map((issue) => {
      const path = (issue.path ?? []).map((p) => (typeof p === 'object' && p !== null && 'key' in p ? String((p as { key: unknown }).key) : String(p))).join('.')
      return path ? `${path}: ${issue.message}` : issue.message
    })
    .join('; ')
}
