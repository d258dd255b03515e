/**
 * Claude Code stream-json lines → `@tanstack/ai` stream chunks. Pure and
 * deterministic (only the lines, the ids and the injected `genId`); no IO.
 * Text comes from partial deltas, so nothing doubles. One file: one translator
 * state that every line type reads and updates in order.
 * Design notes: docs/design/harness-adapters.md
 */
import { EventType, type StreamChunk, type TokenUsage } from '@tanstack/ai'
import { TOOL_BRIDGE_SERVER_NAME, TOOL_BRIDGE_UNAVAILABLE_EVENT, type ToolBridgeUnavailableValue } from '@tanstack/ai-sandbox'
import type { ClaudeContentBlock, ClaudeLine, ClaudeStreamEvent, ClaudeUsage } from './cli-events.js'

/** The `CUSTOM` event that carries the CLI session id (pass it back as `modelOptions.sessionId`). */
export const CLAUDE_CODE_SESSION_EVENT = 'claude-code.session-id'

/** The `CUSTOM` event describing the CLI session as it started: `{ model, tools, mcpServers: [{ name, status }], permissionMode }`. */
export const CLAUDE_CODE_INIT_EVENT = 'claude-code.init'

/** The `CUSTOM` event listing the tool uses the CLI refused under its permissions (`{ denials: [{ toolName, toolUseId, input }] }`). */
export const CLAUDE_CODE_PERMISSION_DENIALS_EVENT = 'claude-code.permission-denials'

/** Inputs of {@link createClaudeCodeTranslator}. */
export interface ClaudeCodeTranslatorOptions {
  runId: string
  threadId: string
  /** Id generator for message ids; inject a run-scoped counter for replayable output. */
  genId: () => string
  /** Model name reported on `RUN_FINISHED`. */
  model?: string
}

/** How the CLI process ended, for {@link ClaudeCodeTranslator.finish}. */
export interface ClaudeCodeExit {
  exitCode: number
  signal?: string
  /** The last bytes the CLI wrote to stderr. */
  stderrTail: string
}

/** A stateful translator for one run. */
export interface ClaudeCodeTranslator {
  /** Chunks that open the run (`RUN_STARTED`). */
  start: () => StreamChunk[]
  /** Chunks for one parsed stdout line. Unknown lines yield nothing. */
  push: (line: unknown) => StreamChunk[]
  /** Chunks that close the run when the CLI exited; empty when a result line already closed it. */
  finish: (exit: ClaudeCodeExit) => StreamChunk[]
  /** The CLI session id, once known. */
  readonly sessionId: string | undefined
}

type Open = { kind: 'text'; messageId: string } | { kind: 'reasoning'; messageId: string } | { kind: 'tool'; toolCallId: string; args: string[] }

/** The prefix Claude Code gives the bridge's tools: `mcp__tanstack__<tool>`. */
const BRIDGED_PREFIX = `mcp__${TOOL_BRIDGE_SERVER_NAME}__`

/** Exit code of a shell that could not find the program. */
const COMMAND_NOT_FOUND = 127

/**
 * Create a translator for one run.
 * @example
 * ```ts
 * let n = 0
 * const t = createClaudeCodeTranslator({ runId: 'r1', threadId: 't1', genId: () => `r1-${n++}` })
 * const chunks = [...t.start(), ...lines.flatMap(t.push), ...t.finish({ exitCode: 0, stderrTail: '' })]
 * ```
 */
export function createClaudeCodeTranslator(options: ClaudeCodeTranslatorOptions): ClaudeCodeTranslator {
  const { runId, threadId, genId } = options
  let sessionId: string | undefined
  let closed = false
  let lastStopReason: string | null | undefined
  const streamed = new Set<string>()
  const open = new Map<number, Open>()
  let streamingMessage: string | undefined

  function noteSession(line: ClaudeLine): StreamChunk[] {
    if (sessionId !== undefined || typeof line.session_id !== 'string' || line.session_id === '') return []
    sessionId = line.session_id
    return [{ type: EventType.CUSTOM, name: CLAUDE_CODE_SESSION_EVENT, value: { sessionId } }]
  }

  function onStreamEvent(event: ClaudeStreamEvent, apiMessageId: string | undefined): StreamChunk[] {
    switch (event.type) {
      case 'message_start': {
        const dangling = closeOpenBlocks()
        streamingMessage = event.message?.id ?? apiMessageId
        if (streamingMessage) streamed.add(streamingMessage)
        return dangling
      }
      case 'content_block_start': {
        // A second start at an index still open ends the first block before the new one opens.
        const index = event.index ?? 0
        const previous = open.get(index)
        open.delete(index)
        return [...(previous ? closeBlock(previous) : []), ...openBlock(index, isObject(event.content_block) ? event.content_block : {})]
      }
      case 'content_block_delta':
        return delta(event)
      case 'content_block_stop': {
        const block = open.get(event.index ?? 0)
        open.delete(event.index ?? 0)
        return block ? closeBlock(block) : []
      }
      case 'message_delta':
        if (event.delta?.stop_reason !== undefined) lastStopReason = event.delta.stop_reason
        return []
      default:
        return []
    }
  }

  function openBlock(index: number, block: ClaudeContentBlock): StreamChunk[] {
    if (block.type === 'text') {
      const messageId = genId()
      open.set(index, { kind: 'text', messageId })
      return [{ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' }]
    }
    if (block.type === 'thinking') {
      const messageId = genId()
      open.set(index, { kind: 'reasoning', messageId })
      return reasoningStart(messageId)
    }
    if (block.type === 'tool_use' && typeof block.id === 'string') {
      open.set(index, { kind: 'tool', toolCallId: block.id, args: [] })
      return [toolStart(block.id, block.name ?? 'unknown')]
    }
    return []
  }

  function delta(event: ClaudeStreamEvent): StreamChunk[] {
    const block = open.get(event.index ?? 0)
    const d = event.delta
    if (!block || !d) return []
    if (block.kind === 'text' && d.type === 'text_delta' && typeof d.text === 'string' && d.text) return [{ type: EventType.TEXT_MESSAGE_CONTENT, messageId: block.messageId, delta: d.text }]
    if (block.kind === 'reasoning' && d.type === 'thinking_delta' && typeof d.thinking === 'string' && d.thinking) return [{ type: EventType.REASONING_MESSAGE_CONTENT, messageId: block.messageId, delta: d.thinking }]
    if (block.kind === 'tool' && d.type === 'input_json_delta' && typeof d.partial_json === 'string' && d.partial_json) {
      block.args.push(d.partial_json)
      return [{ type: EventType.TOOL_CALL_ARGS, toolCallId: block.toolCallId, delta: d.partial_json }]
    }
    return []
  }

  function closeBlock(block: Open): StreamChunk[] {
    if (block.kind === 'text') return [{ type: EventType.TEXT_MESSAGE_END, messageId: block.messageId }]
    if (block.kind === 'reasoning') return [{ type: EventType.REASONING_MESSAGE_END, messageId: block.messageId }, { type: EventType.REASONING_END, messageId: block.messageId }]
    return [toolEnd(block.toolCallId, parseArgs(block.args.join('')))]
  }

  function toolStart(toolCallId: string, cliName: string): StreamChunk {
    const name = appToolName(cliName)
    // The CLI runs its own tools (and the bridge runs the app's); core must never try to execute them.
    const metadata = { providerExecuted: true, harness: 'claude-code', ...(name !== cliName ? { cliToolName: cliName } : {}) }
    return { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: name, toolName: name, metadata }
  }

  /** A complete assistant message that was not streamed (no partial messages, or a replayed transcript). */
  function onAssistant(line: ClaudeLine): StreamChunk[] {
    const message = line.message
    if (!message || !Array.isArray(message.content)) return []
    if (message.model === '<synthetic>') return [] // the CLI's own error/notice text; the result line reports it
    // Streamed already: by id, or (no id at all) whenever this run streams.
    if (message.id ? streamed.has(message.id) : streamed.size > 0) return []
    const out: StreamChunk[] = []
    for (const block of message.content.filter(isObject)) {
      if (block.type === 'text' && typeof block.text === 'string' && block.text) {
        const messageId = genId()
        out.push({ type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' }, { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: block.text }, { type: EventType.TEXT_MESSAGE_END, messageId })
      } else if (block.type === 'thinking' && typeof block.thinking === 'string' && block.thinking) {
        const messageId = genId()
        out.push(...reasoningStart(messageId), { type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: block.thinking }, ...closeBlock({ kind: 'reasoning', messageId }))
      } else if (block.type === 'tool_use' && typeof block.id === 'string') {
        out.push(toolStart(block.id, block.name ?? 'unknown'), { type: EventType.TOOL_CALL_ARGS, toolCallId: block.id, delta: JSON.stringify(block.input ?? {}) }, toolEnd(block.id, block.input ?? {}))
      }
    }
    return out
  }

  /** Tool results the CLI feeds back to the model. */
  function onUser(line: ClaudeLine): StreamChunk[] {
    const content = line.message?.content
    if (!Array.isArray(content)) return []
    return content
      .filter(isObject)
      .filter((block) => block.type === 'tool_result' && typeof block.tool_use_id === 'string')
      .flatMap((block): StreamChunk[] => [...closeToolBlock(block.tool_use_id!), { type: EventType.TOOL_CALL_RESULT, messageId: genId(), toolCallId: block.tool_use_id!, content: resultText(block.content), role: 'tool' }])
  }

  /** The CLI can report a tool's result before the block's stop event (a refused tool): end the call first. */
  function closeToolBlock(toolCallId: string): StreamChunk[] {
    for (const [index, block] of open) {
      if (block.kind === 'tool' && block.toolCallId === toolCallId) {
        open.delete(index)
        return closeBlock(block)
      }
    }
    return []
  }

  function onSessionGone(reason: string): StreamChunk[] {
    closed = true
    const message = `Claude Code could not resume the session: ${reason}. The session is gone (sessions live under $HOME/.claude inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions.`
    return [runError(message, 'session_not_found')]
  }

  function onResult(line: ClaudeLine): StreamChunk[] {
    closed = true
    const denials = permissionDenials(line)
    // The turn limit (`--max-turns`) is a length stop, as other adapters report one, not a failure.
    const maxTurns = line.subtype === 'error_max_turns'
    const error = !maxTurns && (line.is_error === true || (typeof line.subtype === 'string' && line.subtype.startsWith('error')))
    if (error) {
      const code = line.api_error_status
        ? `api_error_${line.api_error_status}`
        : promptTooLong(line)
          ? 'prompt_too_large'
          : line.subtype && line.subtype !== 'success'
            ? line.subtype
            : 'cli_error'
      return [...denials, runError(resultErrorMessage(line), code)]
    }
    const usage = usageOf(line.usage, line.total_cost_usd)
    const finished: StreamChunk = {
      type: EventType.RUN_FINISHED,
      runId,
      threadId,
      finishReason: maxTurns ? 'length' : finishReason(line.stop_reason ?? lastStopReason),
      ...(options.model ? { model: options.model } : {}),
      ...(usage ? { usage } : {}),
    }
    return [...denials, finished]
  }

  function runError(message: string, code: string): StreamChunk {
    return { type: EventType.RUN_ERROR, runId, threadId, message, code, error: { message, code } }
  }

  return {
    start: () => [{ type: EventType.RUN_STARTED, runId, threadId }],
    push(raw) {
      if (closed || typeof raw !== 'object' || raw === null) return []
      const line = raw as ClaudeLine
      // A resume of a session the CLI does not have: its result line carries no session worth announcing.
      const gone = line.type === 'result' ? sessionGoneReason(line) : undefined
      if (gone !== undefined) return [...closeOpenBlocks(), ...onSessionGone(gone)]
      const out = noteSession(line)
      // Lines of a sub-agent (Task tool) belong to that tool call, not to the conversation.
      if (line.parent_tool_use_id) return out
      if (line.type === 'system' && line.subtype === 'init') out.push(...onInit(line))
      else if (line.type === 'stream_event' && line.event) out.push(...onStreamEvent(line.event, line.api_message_id))
      else if (line.type === 'assistant') out.push(...onAssistant(line))
      else if (line.type === 'user') out.push(...onUser(line))
      else if (line.type === 'result') out.push(...closeOpenBlocks(), ...onResult(line))
      return out
    },
    finish(exit) {
      if (closed) return []
      closed = true
      const tail = typeof exit.stderrTail === 'string' ? exit.stderrTail : ''
      const notFound = cliNotFound(exit.exitCode, tail)
      const message = exitMessage({ ...exit, stderrTail: tail }, notFound)
      return [...closeOpenBlocks(), runError(message, notFound ? 'cli_not_found' : 'cli_exit')]
    },
    get sessionId() {
      return sessionId
    },
  }

  function closeOpenBlocks(): StreamChunk[] {
    const out = [...open.values()].flatMap(closeBlock)
    open.clear()
    return out
  }
}

/**
 * Translate a whole recorded transcript at once.
 * @returns Every chunk, including `RUN_STARTED` and the closing chunk.
 */
export function translateClaudeCodeLines(lines: readonly unknown[], options: ClaudeCodeTranslatorOptions, exit: ClaudeCodeExit = { exitCode: 0, stderrTail: '' }): StreamChunk[] {
  const translator = createClaudeCodeTranslator(options)
  return [...translator.start(), ...lines.flatMap((line) => translator.push(line)), ...translator.finish(exit)]
}

/**
 * What the CLI announced at start: which tools and MCP servers it has (and
 * whether each server connected), then {@link TOOL_BRIDGE_UNAVAILABLE_EVENT}
 * when the tool bridge's server is listed but did not connect.
 */
function onInit(line: ClaudeLine): StreamChunk[] {
  const mcpServers = (Array.isArray(line.mcp_servers) ? line.mcp_servers : []).filter(isObject).map((s) => ({ name: s.name, status: s.status }))
  const init: StreamChunk = {
    type: EventType.CUSTOM,
    name: CLAUDE_CODE_INIT_EVENT,
    value: { model: line.model, tools: Array.isArray(line.tools) ? line.tools : [], mcpServers, permissionMode: line.permissionMode },
  }
  const bridge = mcpServers.find((s) => s.name === TOOL_BRIDGE_SERVER_NAME)
  if (!bridge || bridge.status === 'connected') return [init]
  const status = typeof bridge.status === 'string' && bridge.status !== '' ? bridge.status : 'unknown'
  const value: ToolBridgeUnavailableValue = { server: TOOL_BRIDGE_SERVER_NAME, status, reason: bridgeUnavailableReason(status) }
  return [init, { type: EventType.CUSTOM, name: TOOL_BRIDGE_UNAVAILABLE_EVENT, value }]
}

/** Why the host tools are missing, in one sentence, by the status Claude Code gave the bridge's MCP server. */
function bridgeUnavailableReason(status: string): string {
  const why =
    status === 'failed'
      ? 'Claude Code could not connect to the tool bridge (its MCP server "tanstack" failed; check that the sandbox can reach the host)'
      : status === 'needs-auth'
        ? 'Claude Code wants to authenticate to the tool bridge (its MCP server "tanstack" needs auth, so the bridge token was not accepted)'
        : status === 'pending'
          ? 'Claude Code had not connected to the tool bridge when the session started (its MCP server "tanstack" was still pending)'
          : `Claude Code reported the tool bridge's MCP server "tanstack" as ${JSON.stringify(status)}, not connected`
  return `The host tools passed to chat({ tools }) are not available to the agent in this run: ${why}.`
}

/** The result line's refused tool uses as one `CUSTOM` chunk (none when nothing was refused). */
function permissionDenials(line: ClaudeLine): StreamChunk[] {
  const list = Array.isArray(line.permission_denials) ? line.permission_denials : []
  if (list.length === 0) return []
  const denials = list.filter(isObject).map((d) => ({ toolName: typeof d.tool_name === 'string' ? appToolName(d.tool_name) : d.tool_name, toolUseId: d.tool_use_id, input: d.tool_input }))
  return [{ type: EventType.CUSTOM, name: CLAUDE_CODE_PERMISSION_DENIALS_EVENT, value: { denials } }]
}

/** `TOOL_CALL_END` with the parsed arguments, so readers need not join the deltas. */
function toolEnd(toolCallId: string, input: unknown): StreamChunk {
  return { type: EventType.TOOL_CALL_END, toolCallId, ...(input === undefined ? {} : { input }) }
}

/** `REASONING_START` and `REASONING_MESSAGE_START` of one reasoning message. */
function reasoningStart(messageId: string): StreamChunk[] {
  return [
    { type: EventType.REASONING_START, messageId },
    { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' },
  ]
}

/** The name the app registered for a bridged tool (`mcp__tanstack__get_weather` → `get_weather`); any other tool keeps the CLI's name. */
function appToolName(cliName: string): string {
  return cliName.startsWith(BRIDGED_PREFIX) && cliName.length > BRIDGED_PREFIX.length ? cliName.slice(BRIDGED_PREFIX.length) : cliName
}

function parseArgs(json: string): unknown {
  if (json === '') return {}
  try {
    return JSON.parse(json)
  } catch {
    return undefined // cut off mid-stream; the deltas still carry what arrived
  }
}

function isObject<T>(value: T): value is T & object {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function resultText(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part === 'object' && part !== null && typeof (part as { text?: unknown }).text === 'string' ? (part as { text: string }).text : JSON.stringify(part))).join('\n')
  }
  return content === undefined ? '' : JSON.stringify(content)
}

/** The CLI's answers to `--resume` with an id it has no session (or session title) for. */
const SESSION_GONE = [/No conversation found with session ID: \S+/, /Provided value .* is not a UUID and does not match any session title/]

/** The CLI's one-line reason when an error result says the session to resume does not exist, else `undefined`. */
function sessionGoneReason(line: ClaudeLine): string | undefined {
  const isError = line.is_error === true || (typeof line.subtype === 'string' && line.subtype.startsWith('error'))
  if (!isError) return undefined
  const texts = [...(Array.isArray(line.errors) ? line.errors : []), line.result].filter((e): e is string => typeof e === 'string')
  for (const text of texts) {
    for (const pattern of SESSION_GONE) {
      const match = pattern.exec(text)
      if (match) return match[0].replace(/\.$/, '')
    }
  }
  return undefined
}

function resultErrorMessage(line: ClaudeLine): string {
  if (typeof line.result === 'string' && line.result.trim() !== '') return line.result.trim()
  if (Array.isArray(line.errors) && line.errors.length > 0) return line.errors.map((e) => (typeof e === 'string' ? e : JSON.stringify(e))).join('; ')
  return `Claude Code reported an error (${line.subtype ?? 'unknown'}).`
}

/** Did the shell fail to find or start the CLI? Exit 127, or the shell saying so on stderr. */
function cliNotFound(exitCode: number, stderrTail: string): boolean {
  return exitCode === COMMAND_NOT_FOUND || exitCode === 126 || /(^|\n)(sh|bash|\S*sh): .*(not found|No such file or directory|Permission denied)/.test(stderrTail)
}

/** Claude Code's refusal to bypass permissions as root, on stderr. */
const ROOT_REFUSAL = /cannot be used with root\/sudo privileges/i
/** What to do about it (docs/adapters/claude-code.md, "Policy"). */
const ROOT_ADVICE =
  'The agent runs as root and the policy allows everything (permission mode bypassPermissions), which Claude Code refuses outside a sandbox it knows is isolated. ' +
  'Run the app (or the sandbox user) as a user other than root, use a provider that isolates (dockerSandbox sets IS_SANDBOX=1 for you), ' +
  "or, knowing that it tells the CLI it is isolated when it runs on your machine, pass claudeCodeText(model, { env: { IS_SANDBOX: '1' } })."

function exitMessage(exit: ClaudeCodeExit, notFound: boolean): string {
  const tail = exit.stderrTail.trim().split('\n').slice(-20).join('\n')
  if (notFound) {
    return 'The claude CLI was not found in the sandbox. Install it in the workspace setup (e.g. `npm install -g @anthropic-ai/claude-code`), bake it into the sandbox image, or pass claudeCodeText(model, { executable }) with its path.' + (tail ? `\n${tail}` : '')
  }
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`
  return `Claude Code ${how} without a result line.${tail ? `\n${tail}` : ' It wrote nothing to stderr.'}${ROOT_REFUSAL.test(tail) ? `\n${ROOT_ADVICE}` : ''}`
}

function finishReason(stop: string | null | undefined): 'stop' | 'length' | 'tool_calls' | 'content_filter' {
  if (stop === 'max_tokens') return 'length'
  if (stop === 'refusal') return 'content_filter'
  return 'stop'
}

/**
 * The result line's usage as core's `TokenUsage`, or `undefined` when the CLI
 * reported no token counts. Anthropic's `input_tokens` leaves the cache out, so
 * `promptTokens` adds the cache reads and writes back: it is the whole input,
 * and `promptTokensDetails` splits it. `output_tokens` already includes thinking.
 */
function usageOf(usage: ClaudeUsage | undefined, cost: number | undefined): TokenUsage | undefined {
  if (!isObject(usage)) return undefined
  const input = count(usage.input_tokens)
  const output = count(usage.output_tokens)
  if (input === undefined && output === undefined) return undefined
  const cacheRead = count(usage.cache_read_input_tokens) ?? 0
  const cacheWrite = count(usage.cache_creation_input_tokens) ?? 0
  const thinking = isObject(usage.output_tokens_details) ? (count(usage.output_tokens_details.thinking_tokens) ?? 0) : 0
  const promptTokens = (input ?? 0) + cacheRead + cacheWrite
  const completionTokens = output ?? 0
  return {
    promptTokens,
    completionTokens,
    totalTokens: promptTokens + completionTokens,
    ...(cacheRead || cacheWrite ? { promptTokensDetails: { ...(cacheRead ? { cachedTokens: cacheRead } : {}), ...(cacheWrite ? { cacheWriteTokens: cacheWrite } : {}) } } : {}),
    ...(thinking ? { completionTokensDetails: { reasoningTokens: thinking } } : {}),
    ...(typeof cost === 'number' && Number.isFinite(cost) ? { cost } : {}),
  }
}

/** A token count the CLI reported, or `undefined` when it is missing or not a count. */
function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined
}

/** The CLI refused the prompt before asking the model: its result says "Prompt is too long" (terminal reason `blocking_limit`). */
function promptTooLong(line: ClaudeLine): boolean {
  return typeof line.result === 'string' && /^prompt is too long/i.test(line.result)
}
