/**
 * `codex exec --json` lines → `@tanstack/ai` stream chunks. Pure and
 * deterministic (only the lines, the ids and the injected `genId`); no IO.
 * Tool-call ids come from `genId`. One file: one translator state that every
 * item type reads and updates in order.
 * Design notes: docs/design/harness-adapters.md
 */
import { EventType, type StreamChunk, type TokenUsage } from '@tanstack/ai'
import { TOOL_BRIDGE_SERVER_NAME } from '@tanstack/ai-sandbox'
import type { CodexItem, CodexLine, CodexUsage } from './cli-events.js'

/** The `CUSTOM` event that carries the Codex thread id (pass it back as `modelOptions.sessionId`). */
export const CODEX_SESSION_EVENT = 'codex.session-id'

/** The `CUSTOM` event for a non-fatal `error` line or item (`{ message }`), e.g. a reconnect notice. The run's outcome comes from the turn's end. */
export const CODEX_ERROR_EVENT = 'codex.error'

/** Options of {@link createCodexTranslator}. */
export interface CodexTranslatorOptions {
  runId: string
  threadId: string
  /** Reported on `RUN_FINISHED`. */
  model?: string
  /** Id generator for messages and tool calls; inject `createRunScopedIdGen(runId)` for replayable ids. */
  genId: () => string
}

/** How the CLI process ended (from `spawnNdjson`'s `onExit`). */
export interface CodexExit {
  exitCode: number
  signal?: string
  stderrTail: string
}

/** A translator for one run. */
export interface CodexTranslator {
  /** `RUN_STARTED`. */
  start: () => StreamChunk[]
  /** Translate one parsed stdout line (anything JSON.parse returned). Never throws. */
  push: (line: unknown) => StreamChunk[]
  /** After the process exited: `RUN_ERROR` when no `turn.completed`/`turn.failed` line already closed the run. */
  finish: (exit: CodexExit) => StreamChunk[]
  /** The Codex thread id, once known. */
  readonly sessionId: string | undefined
}

/** The chunk name and input a tool call is reported with (`cliName`: the CLI's name for a bridged tool, when it differs). */
interface ToolView {
  name: string
  input: unknown
  cliName?: string
}

/** Exit codes of a shell that could not find (127) or execute (126) the program. */
const NOT_FOUND_EXITS = new Set([126, 127])

/**
 * Create a translator for one run.
 * @example
 * ```ts
 * const t = createCodexTranslator({ runId: 'r1', threadId: 't1', genId: createRunScopedIdGen('r1') })
 * const chunks = [...t.start(), ...lines.flatMap(t.push), ...t.finish({ exitCode: 0, stderrTail: '' })]
 * ```
 */
export function createCodexTranslator(options: CodexTranslatorOptions): CodexTranslator {
  const { runId, threadId, genId } = options
  let sessionId: string | undefined
  let closed = false
  let lastError: string | undefined
  /** Tool items already announced: CLI item id → our tool-call id. */
  const tools = new Map<string, string>()

  function onItem(phase: 'started' | 'completed', item: CodexItem): StreamChunk[] {
    if (item.type === 'agent_message') return phase === 'completed' ? textMessage(item.text) : []
    if (item.type === 'reasoning') return phase === 'completed' ? reasoning(item.text) : []
    if (item.type === 'error') return phase === 'completed' ? notice(item.message ?? item.text) : []
    const view = toolView(item)
    if (!view || typeof item.id !== 'string') return []
    const out: StreamChunk[] = []
    let toolCallId = tools.get(item.id)
    if (toolCallId === undefined) {
      toolCallId = genId()
      tools.set(item.id, toolCallId)
      // The CLI runs its own tools (and the bridge runs the app's); core must never try to execute them.
      const metadata = { providerExecuted: true, harness: 'codex', itemType: item.type, ...(view.cliName ? { cliToolName: view.cliName } : {}) }
      out.push(
        { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: view.name, toolName: view.name, metadata },
        { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: JSON.stringify(view.input) },
        { type: EventType.TOOL_CALL_END, toolCallId, input: view.input },
      )
    }
    if (phase === 'completed') {
      tools.delete(item.id)
      out.push({ type: EventType.TOOL_CALL_RESULT, messageId: genId(), toolCallId, content: toolResult(item), role: 'tool' })
    }
    return out
  }

  function textMessage(text: unknown): StreamChunk[] {
    if (typeof text !== 'string' || text === '') return []
    const messageId = genId()
    return [
      { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' },
      { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: text },
      { type: EventType.TEXT_MESSAGE_END, messageId },
    ]
  }

  function reasoning(text: unknown): StreamChunk[] {
    if (typeof text !== 'string' || text === '') return []
    const messageId = genId()
    return [
      { type: EventType.REASONING_START, messageId },
      { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' },
      { type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: text },
      { type: EventType.REASONING_MESSAGE_END, messageId },
      { type: EventType.REASONING_END, messageId },
    ]
  }

  function notice(message: unknown): StreamChunk[] {
    if (typeof message !== 'string' || message === '') return []
    lastError = message
    return [{ type: EventType.CUSTOM, name: CODEX_ERROR_EVENT, value: { message } }]
  }

  function onTurnEnd(line: CodexLine): StreamChunk[] {
    closed = true
    if (line.type === 'turn.failed') {
      const { message, code } = turnError(line.error?.message ?? lastError)
      return [runError(message, code)]
    }
    const usage = usageOf(line.usage)
    return [{ type: EventType.RUN_FINISHED, runId, threadId, finishReason: 'stop', ...(options.model ? { model: options.model } : {}), ...(usage ? { usage } : {}) }]
  }

  function runError(message: string, code: string): StreamChunk {
    return { type: EventType.RUN_ERROR, runId, threadId, message, code, error: { message, code } }
  }

  return {
    start: () => [{ type: EventType.RUN_STARTED, runId, threadId }],
    push(raw) {
      if (closed || typeof raw !== 'object' || raw === null || Array.isArray(raw)) return []
      const line = raw as CodexLine
      switch (line.type) {
        case 'thread.started':
          if (sessionId !== undefined || typeof line.thread_id !== 'string' || line.thread_id === '') return []
          sessionId = line.thread_id
          return [{ type: EventType.CUSTOM, name: CODEX_SESSION_EVENT, value: { sessionId } }]
        case 'item.started':
        case 'item.completed':
          return isObject(line.item) ? onItem(line.type === 'item.started' ? 'started' : 'completed', line.item) : []
        case 'error':
          return notice(line.message)
        case 'turn.completed':
        case 'turn.failed':
          return onTurnEnd(line)
        default:
          return [] // turn.started, item.updated, and anything newer
      }
    },
    finish(exit) {
      if (closed) return []
      closed = true
      const tail = typeof exit.stderrTail === 'string' ? exit.stderrTail : ''
      const gone = THREAD_GONE.exec(tail)?.[0]
      if (gone !== undefined) return [runError(codexSessionGoneMessage(gone), 'session_not_found')]
      const notFound = cliNotFound(exit.exitCode, tail)
      const message = exitMessage({ ...exit, stderrTail: tail }, notFound, lastError)
      return [runError(message, notFound ? 'cli_not_found' : 'cli_exit')]
    },
    get sessionId() {
      return sessionId
    },
  }
}

/**
 * Translate a whole recorded transcript at once.
 * @returns Every chunk, including `RUN_STARTED` and the closing chunk.
 */
export function translateCodexLines(lines: readonly unknown[], options: CodexTranslatorOptions, exit: CodexExit = { exitCode: 0, stderrTail: '' }): StreamChunk[] {
  const translator = createCodexTranslator(options)
  return [...translator.start(), ...lines.flatMap((line) => translator.push(line)), ...translator.finish(exit)]
}

/** How an item that is a tool call is reported, or `undefined` for other items. */
function toolView(item: CodexItem): ToolView | undefined {
  switch (item.type) {
    case 'command_execution':
      return { name: 'exec_command', input: { command: typeof item.command === 'string' ? item.command : '' } }
    case 'file_change':
      return { name: 'apply_patch', input: { changes: changesOf(item) } }
    case 'mcp_tool_call': {
      const cliName = `mcp__${item.server ?? 'unknown'}__${item.tool ?? 'unknown'}`
      // A bridged host tool keeps the name the app registered; other MCP servers' tools keep Codex's namespaced name.
      if (item.server === TOOL_BRIDGE_SERVER_NAME && typeof item.tool === 'string' && item.tool !== '') return { name: item.tool, input: item.arguments ?? {}, cliName }
      return { name: cliName, input: item.arguments ?? {} }
    }
    case 'web_search':
      return { name: 'web_search', input: { query: typeof item.query === 'string' ? item.query : '' } }
    default:
      return undefined
  }
}

function changesOf(item: CodexItem): { path: string; kind: string }[] {
  return (Array.isArray(item.changes) ? item.changes : []).filter(isObject).map((c) => ({ path: String(c.path ?? ''), kind: String(c.kind ?? '') }))
}

/** The text a tool's result is reported with. */
function toolResult(item: CodexItem): string {
  switch (item.type) {
    case 'command_execution': {
      const output = typeof item.aggregated_output === 'string' ? item.aggregated_output : ''
      const code = typeof item.exit_code === 'number' ? item.exit_code : undefined
      if (code === undefined || code === 0) return item.status === 'declined' ? `${output}(declined)` : output
      return `${output}${output === '' || output.endsWith('\n') ? '' : '\n'}(exit code ${code})`
    }
    case 'file_change': {
      const lines = changesOf(item).map((c) => `${c.kind} ${c.path}`)
      return item.status === 'completed' ? lines.join('\n') : [`(${item.status ?? 'failed'})`, ...lines].join('\n')
    }
    case 'mcp_tool_call': {
      if (isObject(item.error) && typeof item.error.message === 'string') return item.error.message
      const content = isObject(item.result) && Array.isArray(item.result.content) ? item.result.content : []
      return content.map((part) => (isObject(part) && typeof part.text === 'string' ? part.text : JSON.stringify(part))).join('\n')
    }
    default:
      return ''
  }
}

/** The message and code of a failed turn; an API's JSON error body is reduced to its message. */
function turnError(raw: string | undefined): { message: string; code: string } {
  const text = typeof raw === 'string' && raw.trim() !== '' ? raw.trim() : 'Codex reported a failed turn without a message.'
  const status = /\bstatus (\d{3})\b/.exec(text)?.[1]
  const body = apiErrorBody(text)
  if (body !== undefined) return { message: body, code: status ? `api_error_${status}` : 'api_error' }
  return { message: text, code: status ? `api_error_${status}` : 'turn_failed' }
}

/** `{"error":{"message":"..."}}` (what the Responses API returns) → its message. */
function apiErrorBody(text: string): string | undefined {
  if (!text.startsWith('{')) return undefined
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } }
    return typeof parsed.error?.message === 'string' && parsed.error.message !== '' ? parsed.error.message : undefined
  } catch {
    return undefined
  }
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Did the shell fail to find or start the CLI? Exit 126/127, or the shell saying so on stderr. */
function cliNotFound(exitCode: number, stderrTail: string): boolean {
  return NOT_FOUND_EXITS.has(exitCode) || /(^|\n)(sh|bash|\S*sh): .*(not found|No such file or directory|Permission denied)/.test(stderrTail)
}

/** What `codex exec resume <id>` prints on stderr for a well-formed id it has no thread for (before any backtrace). */
const THREAD_GONE = /no rollout found for thread id [^\s()]+/

/**
 * What Codex's stderr says when a resumed thread does not exist.
 * @returns The matching text (`no rollout found for thread id <id>`), else `undefined`.
 */
export function codexThreadGone(stderrTail: string): string | undefined {
  return THREAD_GONE.exec(stderrTail)?.[0]
}

/**
 * The `session_not_found` message: the CLI's one-line reason, what it means
 * and the way out, never the stderr around it (a backtrace under `RUST_BACKTRACE`).
 * @param reason - The CLI's reason, e.g. `no rollout found for thread id 0192…`.
 */
export function codexSessionGoneMessage(reason: string): string {
  return `Codex could not resume the thread: ${reason}. The thread is gone (threads live under $CODEX_HOME, default $HOME/.codex, inside the sandbox that ran them); start a new thread by leaving sessionId out of modelOptions.`
}

/** A warning the CLI prints on every run whose CODEX_HOME is under /tmp; never the reason for a failure. */
const STDERR_NOISE = /^WARNING: proceeding, even though we could not create PATH aliases\b/

function exitMessage(exit: CodexExit, notFound: boolean, lastError: string | undefined): string {
  const tail = exit.stderrTail
    .split('\n')
    .filter((line) => line.trim() !== '' && !STDERR_NOISE.test(line))
    .slice(-20)
    .join('\n')
  if (notFound) {
    return 'The codex CLI was not found in the sandbox. Install it in the workspace setup (e.g. `npm install -g @openai/codex`), bake it into the sandbox image, or pass codexText(model, { executable }) with its path.' + (tail ? `\n${tail}` : '')
  }
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`
  const detail = [lastError, tail].filter((part): part is string => typeof part === 'string' && part !== '').join('\n')
  return `Codex ${how} before its turn ended.${detail ? `\n${detail}` : ' It wrote nothing to stderr.'}`
}

/**
 * `turn.completed` usage as core's `TokenUsage`, or `undefined` when the line
 * has no token counts. Codex reports OpenAI's meaning: `input_tokens` is the
 * whole input (`cached_input_tokens` and `cache_write_input_tokens` are parts
 * of it) and `output_tokens` includes `reasoning_output_tokens`.
 */
function usageOf(usage: CodexUsage | undefined): TokenUsage | undefined {
  if (!isObject(usage)) return undefined
  const counted = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value >= 0
  if (!counted(usage.input_tokens) && !counted(usage.output_tokens)) return undefined
  const n = (value: unknown) => (counted(value) ? (value as number) : 0)
  const input = n(usage.input_tokens)
  const output = n(usage.output_tokens)
  const cached = n(usage.cached_input_tokens)
  const cacheWrite = n(usage.cache_write_input_tokens)
  const reasoningTokens = n(usage.reasoning_output_tokens)
  return {
    promptTokens: input,
    completionTokens: output,
    totalTokens: input + output,
    ...(cached || cacheWrite ? { promptTokensDetails: { ...(cached ? { cachedTokens: cached } : {}), ...(cacheWrite ? { cacheWriteTokens: cacheWrite } : {}) } } : {}),
    ...(reasoningTokens ? { completionTokensDetails: { reasoningTokens } } : {}),
  }
}
