/**
 * Grok Build's Agent Client Protocol traffic → `@tanstack/ai` stream chunks.
 * Pure and deterministic (only the transcript, the ids and `genId`); no IO.
 * History replayed while a session loads is never re-emitted. One file: one
 * translator state that every ACP message reads and updates in order.
 * Design notes: docs/design/harness-adapters.md
 */
import { EventType, type StreamChunk, type TokenUsage } from '@tanstack/ai'
import { TOOL_BRIDGE_SERVER_NAME } from '@tanstack/ai-sandbox'
import type { AcpContentBlock, AcpInitializeResult, AcpMessage, AcpPermissionOutcome, AcpPermissionRequest, AcpPromptResult, AcpSessionNotification, AcpSessionUpdate, AcpToolCallContent, AcpUsage, GrokAcpTranscriptEntry } from './cli-events.js'

/** The `CUSTOM` event that carries the ACP session id (pass it back as `modelOptions.sessionId`). */
export const GROK_BUILD_SESSION_EVENT = 'grok-build.session-id'
/** The `CUSTOM` event describing the agent from its `initialize` answer: `{ agent, version, protocolVersion, loadSession, mcpHttp }`. */
export const GROK_BUILD_INIT_EVENT = 'grok-build.init'
/** The `CUSTOM` event for each permission request and the adapter's answer: `{ toolCallId, title, kind, decision, optionId }`. */
export const GROK_BUILD_PERMISSION_EVENT = 'grok-build.permission'
/** The `CUSTOM` event carrying the agent's plan: `{ entries: [{ content, priority, status }] }`. */
export const GROK_BUILD_PLAN_EVENT = 'grok-build.plan'
/** The `CUSTOM` event for an agent notice: `{ severity, title, description }`. */
export const GROK_BUILD_NOTICE_EVENT = 'grok-build.notice'

/** Inputs of {@link createGrokBuildTranslator}. */
export interface GrokBuildTranslatorOptions {
  runId: string
  threadId: string
  /** Id generator for message ids; inject a run-scoped counter for replayable output. */
  genId: () => string
  /** Model name reported on `RUN_FINISHED`. */
  model?: string
}

/** How the CLI process ended, for {@link GrokBuildTranslator.finish}. */
export interface GrokBuildExit {
  exitCode: number
  signal?: string
  /** The last bytes the CLI wrote to stderr. */
  stderrTail: string
}

/** A stateful translator for one run. */
export interface GrokBuildTranslator {
  /** Chunks that open the run (`RUN_STARTED`). */
  start: () => StreamChunk[]
  /** Chunks for one wire message, in wire order. Unknown messages yield nothing. */
  push: (entry: GrokAcpTranscriptEntry) => StreamChunk[]
  /** Chunks that close the run when the connection ended; empty when the prompt's answer already closed it. */
  finish: (exit: GrokBuildExit) => StreamChunk[]
  /** The ACP session id, once known. */
  readonly sessionId: string | undefined
  /** True once `RUN_FINISHED` or `RUN_ERROR` was produced. */
  readonly closed: boolean
}

type OpenMessage = { kind: 'text' | 'reasoning'; messageId: string; acpMessageId: string | undefined }
interface ToolState {
  input: unknown
  argsSent: boolean
  done: boolean
  title: string | undefined
  kind: string | undefined
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined)

/** Exit codes of a shell that could not find (127) or run (126) the program. */
const NOT_FOUND_EXITS = [126, 127]
/** JSON-RPC error code ACP uses for "authentication required". */
const AUTH_REQUIRED = -32000
/** JSON-RPC error code ACP uses for "resource not found": on `session/load` or `session/resume`, the session does not exist. */
const RESOURCE_NOT_FOUND = -32002

/**
 * Create a translator for one run.
 * @example
 * ```ts
 * let n = 0
 * const t = createGrokBuildTranslator({ runId: 'r1', threadId: 't1', genId: () => `r1-${n++}` })
 * const chunks = [...t.start(), ...transcript.flatMap(t.push), ...t.finish({ exitCode: 0, stderrTail: '' })]
 * ```
 */
export function createGrokBuildTranslator(options: GrokBuildTranslatorOptions): GrokBuildTranslator {
  const { runId, threadId, genId } = options
  /** Our requests awaiting an answer: JSON-RPC id → method. */
  const pending = new Map<string, { method: string; sessionId?: string }>()
  /** The agent's permission requests awaiting our answer. */
  const permissionRequests = new Map<string, AcpPermissionRequest>()
  const tools = new Map<string, ToolState>()
  let open: OpenMessage | undefined
  let sessionId: string | undefined
  let loading = 0
  let closed = false
  let lastCost: { amount?: number; currency?: string } | undefined

  const key = (id: unknown) => (typeof id === 'string' || typeof id === 'number' ? String(id) : undefined)

  function noteSession(id: string | undefined): StreamChunk[] {
    if (sessionId !== undefined || id === undefined) return []
    sessionId = id
    return [{ type: EventType.CUSTOM, name: GROK_BUILD_SESSION_EVENT, value: { sessionId } }]
  }

  function closeOpen(): StreamChunk[] {
    const current = open
    open = undefined
    if (!current) return []
    if (current.kind === 'text') return [{ type: EventType.TEXT_MESSAGE_END, messageId: current.messageId }]
    return [
      { type: EventType.REASONING_MESSAGE_END, messageId: current.messageId },
      { type: EventType.REASONING_END, messageId: current.messageId },
    ]
  }

  function content(kind: 'text' | 'reasoning', update: AcpSessionUpdate): StreamChunk[] {
    const block = isObject(update.content) ? (update.content as AcpContentBlock) : undefined
    const text = block?.type === 'text' && typeof block.text === 'string' ? block.text : ''
    if (text === '') return []
    const acpMessageId = str(update.messageId)
    const out: StreamChunk[] = []
    if (!open || open.kind !== kind || (acpMessageId !== undefined && open.acpMessageId !== undefined && acpMessageId !== open.acpMessageId)) {
      out.push(...closeOpen())
      const messageId = genId()
      open = { kind, messageId, acpMessageId }
      if (kind === 'text') out.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' })
      else out.push({ type: EventType.REASONING_START, messageId }, { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' })
    }
    open.acpMessageId ??= acpMessageId
    const messageId = open.messageId
    out.push(kind === 'text' ? { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: text } : { type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: text })
    return out
  }

  /** Start a tool call the first time its id is seen, then report its input, end and result as they arrive. */
  function tool(update: AcpSessionUpdate): StreamChunk[] {
    const toolCallId = str(update.toolCallId)
    if (!toolCallId) return []
    const out: StreamChunk[] = []
    let state = tools.get(toolCallId)
    if (!state) {
      out.push(...closeOpen())
      const cliName = str(update.name) ?? str(update.title) ?? str(update.kind) ?? 'tool'
      const bridged = bridgedToolName(str(update.name)) ?? (str(update.name) ? undefined : bridgedToolName(str(update.title)))
      const name = bridged ?? cliName
      state = { input: undefined, argsSent: false, done: false, title: str(update.title), kind: str(update.kind) }
      tools.set(toolCallId, state)
      // The CLI runs its own tools (and the bridge runs the app's); core must never try to execute them.
      const metadata = { providerExecuted: true, harness: 'grok-build', ...(state.kind ? { kind: state.kind } : {}), ...(state.title ? { title: state.title } : {}), ...(name !== cliName ? { cliToolName: cliName } : {}) }
      out.push({ type: EventType.TOOL_CALL_START, toolCallId, toolCallName: name, toolName: name, metadata })
    }
    state.title ??= str(update.title)
    state.kind ??= str(update.kind)
    if (state.done) return out
    if (!state.argsSent && update.rawInput !== undefined && update.rawInput !== null) {
      state.argsSent = true
      state.input = update.rawInput
      out.push({ type: EventType.TOOL_CALL_ARGS, toolCallId, delta: JSON.stringify(update.rawInput) })
    }
    if (update.status === 'completed' || update.status === 'failed') {
      state.done = true
      out.push(
        { type: EventType.TOOL_CALL_END, toolCallId, input: state.input ?? {}, metadata: { status: update.status } },
        { type: EventType.TOOL_CALL_RESULT, messageId: genId(), toolCallId, content: toolResultText(update), role: 'tool' },
      )
    }
    return out
  }

  function onUpdate(params: AcpSessionNotification): StreamChunk[] {
    const update = params.update
    if (!isObject(update)) return []
    switch (update.sessionUpdate) {
      case 'agent_message_chunk':
        return content('text', update)
      case 'agent_thought_chunk':
        return content('reasoning', update)
      case 'tool_call':
      case 'tool_call_update':
        return tool(update)
      case 'plan': {
        const entries = (Array.isArray(update.entries) ? update.entries : []).filter(isObject).map((e) => ({ content: e.content, priority: e.priority, status: e.status }))
        return [...closeOpen(), { type: EventType.CUSTOM, name: GROK_BUILD_PLAN_EVENT, value: { entries } }]
      }
      case 'usage_update':
        if (isObject(update.cost)) lastCost = update.cost
        return []
      case 'notice':
        return [{ type: EventType.CUSTOM, name: GROK_BUILD_NOTICE_EVENT, value: { severity: update.severity, title: update.title, description: update.description ?? undefined } }]
      default:
        return [] // user_message_chunk (our own prompt echoed), mode/command/config updates
    }
  }

  function fromAgent(message: AcpMessage): StreamChunk[] {
    // A notification or a request from the agent.
    if (typeof message.method === 'string') {
      const params = isObject(message.params) ? message.params : {}
      if (message.method === 'session/update') {
        // While a session loads, the agent replays its history: that is not this run's output.
        if (loading > 0) return []
        return [...noteSession(str(params.sessionId)), ...onUpdate(params as AcpSessionNotification)]
      }
      if (message.method === 'session/request_permission') {
        const id = key(message.id)
        if (id !== undefined) permissionRequests.set(id, params as AcpPermissionRequest)
        const toolCall = isObject(params.toolCall) ? (params.toolCall as AcpSessionUpdate) : undefined
        return toolCall ? tool({ ...toolCall, status: undefined }) : []
      }
      return []
    }
    // A response to one of our requests.
    const id = key(message.id)
    const request = id === undefined ? undefined : pending.get(id)
    if (!request || id === undefined) return []
    pending.delete(id)
    if (request.method === 'session/load' || request.method === 'session/resume') loading = Math.max(0, loading - 1)
    if (isObject(message.error)) return fail(request, message.error)
    const result = isObject(message.result) ? message.result : {}
    switch (request.method) {
      case 'initialize':
        return [initChunk(result as AcpInitializeResult)]
      case 'session/new':
        return noteSession(str(result.sessionId))
      case 'session/load':
      case 'session/resume':
        return noteSession(request.sessionId)
      case 'session/prompt':
        return finished(result as AcpPromptResult)
      default:
        return []
    }
  }

  function fromClient(message: AcpMessage): StreamChunk[] {
    const id = key(message.id)
    if (typeof message.method === 'string') {
      if (id === undefined) return [] // a notification (session/cancel)
      const params = isObject(message.params) ? message.params : {}
      pending.set(id, { method: message.method, ...(str(params.sessionId) ? { sessionId: str(params.sessionId) } : {}) })
      if (message.method === 'session/load' || message.method === 'session/resume') loading++
      return []
    }
    // Our answer to one of the agent's requests.
    const request = id === undefined ? undefined : permissionRequests.get(id)
    if (!request || id === undefined) return []
    permissionRequests.delete(id)
    return [permissionChunk(request, message.result as AcpPermissionOutcome | undefined)]
  }

  function fail(request: { method: string; sessionId?: string }, error: NonNullable<AcpMessage['error']>): StreamChunk[] {
    closed = true
    const { method } = request
    const detail = typeof error.data === 'string' ? error.data : isObject(error.data) && typeof error.data.message === 'string' ? error.data.message : undefined
    const text = [str(error.message) ?? 'unknown error', detail].filter(Boolean).join(': ')
    const sessionGone = error.code === RESOURCE_NOT_FOUND && (method === 'session/load' || method === 'session/resume')
    const code = sessionGone ? 'session_not_found' : error.code === AUTH_REQUIRED ? 'auth_required' : `acp_error${typeof error.code === 'number' ? `_${error.code}` : ''}`
    const hint = error.code === AUTH_REQUIRED ? ' Set XAI_API_KEY in the workspace secrets or grokBuildText(model, { env }), or log the CLI in inside the sandbox.' : ''
    const message = sessionGone
      ? `Grok Build could not resume session ${JSON.stringify(request.sessionId ?? '')}: ${method} failed: ${text}. The session is gone (the agent keeps sessions under its HOME inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions.`
      : `Grok Build: ${method} failed: ${text}.${hint}`
    return [...closeOpen(), ...closeTools(), runError(message, code)]
  }

  function runError(message: string, code: string): StreamChunk {
    return { type: EventType.RUN_ERROR, runId, threadId, message, code, error: { message, code } }
  }

  function finished(result: AcpPromptResult): StreamChunk[] {
    closed = true
    const out = [...closeOpen(), ...closeTools()]
    if (result.stopReason === 'cancelled') {
      return [...out, runError('Grok Build: the agent cancelled the turn before it finished.', 'cancelled')]
    }
    const usage = usageOf(isObject(result.usage) ? result.usage : undefined, lastCost)
    return [...out, { type: EventType.RUN_FINISHED, runId, threadId, finishReason: finishReason(result.stopReason), ...(options.model ? { model: options.model } : {}), ...(usage ? { usage } : {}) }]
  }

  /** Tool calls the agent never reported finished end without a result when the turn ends. */
  function closeTools(): StreamChunk[] {
    const out: StreamChunk[] = []
    for (const [toolCallId, state] of tools) {
      if (state.done) continue
      state.done = true
      out.push({ type: EventType.TOOL_CALL_END, toolCallId, input: state.input ?? {}, metadata: { status: 'unfinished' } })
    }
    return out
  }

  return {
    start: () => [{ type: EventType.RUN_STARTED, runId, threadId }],
    push(entry) {
      if (closed || !isObject(entry) || !isObject(entry.message)) return []
      if (entry.from === 'agent') return fromAgent(entry.message)
      if (entry.from === 'client') return fromClient(entry.message)
      return []
    },
    finish(exit) {
      if (closed) return []
      closed = true
      const tail = typeof exit.stderrTail === 'string' ? exit.stderrTail : ''
      const notFound = cliNotFound(exit.exitCode, tail)
      const message = exitMessage({ ...exit, stderrTail: tail }, notFound)
      return [...closeOpen(), ...closeTools(), runError(message, notFound ? 'cli_not_found' : 'cli_exit')]
    },
    get sessionId() {
      return sessionId
    },
    get closed() {
      return closed
    },
  }
}

/**
 * Translate a whole recorded transcript at once.
 * @returns Every chunk, including `RUN_STARTED` and the closing chunk.
 */
export function translateGrokBuildTranscript(entries: readonly GrokAcpTranscriptEntry[], options: GrokBuildTranslatorOptions, exit: GrokBuildExit = { exitCode: 0, stderrTail: '' }): StreamChunk[] {
  const translator = createGrokBuildTranslator(options)
  return [...translator.start(), ...entries.flatMap((entry) => translator.push(entry)), ...translator.finish(exit)]
}

function initChunk(result: AcpInitializeResult): StreamChunk {
  const info = isObject(result.agentInfo) ? result.agentInfo : {}
  const caps = isObject(result.agentCapabilities) ? result.agentCapabilities : {}
  return {
    type: EventType.CUSTOM,
    name: GROK_BUILD_INIT_EVENT,
    value: { agent: info.name, version: info.version, protocolVersion: result.protocolVersion, loadSession: caps.loadSession === true, mcpHttp: caps.mcpCapabilities?.http === true },
  }
}

function permissionChunk(request: AcpPermissionRequest, answer: AcpPermissionOutcome | undefined): StreamChunk {
  const outcome = isObject(answer?.outcome) ? answer!.outcome : {}
  const option = (Array.isArray(request.options) ? request.options : []).find((o) => isObject(o) && o.optionId === outcome.optionId)
  const decision = outcome.outcome !== 'selected' ? 'cancelled' : option?.kind?.startsWith('allow') ? 'allow' : 'deny'
  const toolCall = isObject(request.toolCall) ? request.toolCall : {}
  return {
    type: EventType.CUSTOM,
    name: GROK_BUILD_PERMISSION_EVENT,
    value: { toolCallId: toolCall.toolCallId, title: toolCall.title ?? undefined, kind: toolCall.kind ?? undefined, decision, ...(outcome.optionId ? { optionId: outcome.optionId } : {}) },
  }
}

/** A tool call's outcome as text: its content blocks, a note per diff or terminal, else its raw output. */
function toolResultText(update: AcpSessionUpdate): string {
  const entries = Array.isArray(update.content) ? (update.content as AcpToolCallContent[]).filter(isObject) : []
  const parts = entries.map((entry) => {
    if (entry.type === 'content') return isObject(entry.content) && typeof entry.content.text === 'string' ? entry.content.text : ''
    if (entry.type === 'diff') return `[diff ${entry.path ?? '?'}]`
    if (entry.type === 'terminal') return `[terminal ${entry.terminalId ?? '?'}]`
    return ''
  })
  const text = parts.filter((p) => p !== '').join('\n')
  if (text !== '') return text
  if (typeof update.rawOutput === 'string') return update.rawOutput
  if (update.rawOutput !== undefined && update.rawOutput !== null) return JSON.stringify(update.rawOutput)
  return update.status === 'failed' ? 'failed' : ''
}

function finishReason(stop: string | undefined): 'stop' | 'length' | 'content_filter' {
  if (stop === 'max_tokens' || stop === 'max_turn_requests') return 'length'
  if (stop === 'refusal') return 'content_filter'
  return 'stop'
}

/**
 * The prompt answer's usage as core's `TokenUsage`, or `undefined` when the
 * agent reported no token counts. ACP's `inputTokens` is the whole input and
 * `cachedReadTokens`/`cachedWriteTokens` are parts of it (the recorded agent's
 * `totalTokens` is `inputTokens + outputTokens`); `thoughtTokens` is reported
 * as the reasoning detail. The cost comes from the last `usage_update`, in USD only.
 */
function usageOf(usage: AcpUsage | undefined, cost: { amount?: number; currency?: string } | undefined): TokenUsage | undefined {
  if (!usage || (!isCount(usage.inputTokens) && !isCount(usage.outputTokens) && !isCount(usage.totalTokens))) return undefined
  const num = (value: unknown) => (isCount(value) ? value : 0)
  const promptTokens = num(usage.inputTokens)
  const completionTokens = num(usage.outputTokens)
  const cached = num(usage.cachedReadTokens)
  const cacheWrite = num(usage.cachedWriteTokens)
  const reasoning = num(usage.thoughtTokens)
  return {
    promptTokens,
    completionTokens,
    totalTokens: isCount(usage.totalTokens) ? usage.totalTokens : promptTokens + completionTokens,
    ...(cached || cacheWrite ? { promptTokensDetails: { ...(cached ? { cachedTokens: cached } : {}), ...(cacheWrite ? { cacheWriteTokens: cacheWrite } : {}) } } : {}),
    ...(reasoning ? { completionTokensDetails: { reasoningTokens: reasoning } } : {}),
    ...(typeof cost?.amount === 'number' && (cost.currency ?? 'USD') === 'USD' ? { cost: cost.amount } : {}),
  }
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

/** A tool name as the agent may report a bridged tool: `mcp__tanstack__<tool>` or the title `tanstack: <tool>`. */
const BRIDGED_NAME = new RegExp(`^(?:mcp__${TOOL_BRIDGE_SERVER_NAME}__|${TOOL_BRIDGE_SERVER_NAME}: ?)([A-Za-z0-9_.-]+)$`)

/** The app's name of a bridged tool the agent named `value`, else `undefined` (a native tool, or another MCP server's). */
function bridgedToolName(value: string | undefined): string | undefined {
  return value === undefined ? undefined : BRIDGED_NAME.exec(value)?.[1]
}

/** Did the shell fail to find or start the CLI? Exit 126/127, or the shell saying so on stderr. */
function cliNotFound(exitCode: number, stderrTail: string): boolean {
  return NOT_FOUND_EXITS.includes(exitCode) || /(^|\n)(sh|bash|\S*sh): .*(not found|No such file or directory|Permission denied)/.test(stderrTail)
}

function exitMessage(exit: GrokBuildExit, notFound: boolean): string {
  const tail = exit.stderrTail.trim().split('\n').slice(-20).join('\n')
  if (notFound) {
    return (
      'The grok CLI (Grok Build) was not found in the sandbox: looked for $HOME/.grok/bin/grok, then grok on PATH. Install it in the workspace setup with xAI\'s install script (it puts the CLI in $HOME/.grok/bin), bake it into the sandbox image, or pass grokBuildText(model, { executable }) with its path.' +
      (tail ? `\n${tail}` : '')
    )
  }
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`
  return `Grok Build ${how} before the turn ended.${tail ? `\n${tail}` : ' It wrote nothing to stderr.'}`
}
