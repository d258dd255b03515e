/**
 * `opencode run --format json` lines → `@tanstack/ai` stream chunks. Pure and
 * deterministic (only the lines, the ids and the injected `genId`); no IO.
 * One file: one translator state that every part type reads and updates in
 * order, up to the line that closes the run.
 * Design notes: docs/design/harness-adapters.md
 */
import { EventType, type StreamChunk, type TokenUsage } from '@tanstack/ai'
import { TOOL_BRIDGE_SERVER_NAME } from '@tanstack/ai-sandbox'
import type { OpencodeError, OpencodeLine, OpencodePart, OpencodeTokens } from './cli-events.js'

/** The `CUSTOM` event that carries the OpenCode session id (pass it back as `modelOptions.sessionId`). */
export const OPENCODE_SESSION_EVENT = 'opencode.session-id'

/**
 * The `CUSTOM` event for a tool call OpenCode refused under its permissions:
 * `{ toolCallId, toolName, input, reason }`, `reason` being `'rule'` (a deny
 * rule matched) or `'rejected'` (an `ask` rule, which a headless run rejects).
 */
export const OPENCODE_PERMISSION_DENIED_EVENT = 'opencode.permission-denied'

/** Options of {@link createOpencodeTranslator}. */
export interface OpencodeTranslatorOptions {
  runId: string
  threadId: string
  /** Reported on `RUN_FINISHED`. */
  model?: string
  /** Id generator for messages; inject `createRunScopedIdGen(runId)` for replayable ids. */
  genId: () => string
  /** The session this run asked to resume, named in the error when the CLI cannot find it. */
  resumeSessionId?: string
}

/** How the CLI process ended (from `spawnNdjson`'s `onExit`). */
export interface OpencodeExit {
  exitCode: number
  signal?: string
  stderrTail: string
}

/** A translator for one run. */
export interface OpencodeTranslator {
  /** `RUN_STARTED`. */
  start: () => StreamChunk[]
  /** Translate one parsed stdout line (anything JSON.parse returned). Never throws. */
  push: (line: unknown) => StreamChunk[]
  /** After the process exited: `RUN_FINISHED` on exit 0, else `RUN_ERROR`; nothing when an `error` line already closed the run. */
  finish: (exit: OpencodeExit) => StreamChunk[]
  /** The OpenCode session id, once known. */
  readonly sessionId: string | undefined
}

/** Token counts summed over a run's steps; `steps` counts the steps that reported any, `totals` those that also reported `total`. */
interface UsageSum {
  input: number
  output: number
  reasoning: number
  cacheRead: number
  cacheWrite: number
  total: number
  steps: number
  totals: number
  cost: number
  costSeen: boolean
}

/** The prefix OpenCode gives the bridge's tools: `<server>_<tool>`, i.e. `tanstack_<tool>`. */
const BRIDGED_PREFIX = `${TOOL_BRIDGE_SERVER_NAME}_`

/** Exit codes of a shell that could not find (127) or execute (126) the program. */
const NOT_FOUND_EXITS = new Set([126, 127])

/** What OpenCode writes as a tool's error when a permission rule denied the call, or the headless run rejected an `ask`. */
const DENIED_BY_RULE = 'The user has specified a rule which prevents you from using this specific tool call'
const REJECTED = 'The user rejected permission to use this specific tool call'

/**
 * Create a translator for one run.
 * @example
 * ```ts
 * let n = 0
 * const t = createOpencodeTranslator({ runId: 'r1', threadId: 't1', genId: () => `r1-${n++}` })
 * const chunks = [...t.start(), ...lines.flatMap(t.push), ...t.finish({ exitCode: 0, stderrTail: '' })]
 * ```
 */
export function createOpencodeTranslator(options: OpencodeTranslatorOptions): OpencodeTranslator {
  const { runId, threadId, genId } = options
  let sessionId: string | undefined
  let closed = false
  let lastReason: string | undefined
  const usage: UsageSum = { input: 0, output: 0, reasoning: 0, cacheRead: 0, cacheWrite: 0, total: 0, steps: 0, totals: 0, cost: 0, costSeen: false }

  function noteSession(line: OpencodeLine): StreamChunk[] {
    if (sessionId !== undefined || typeof line.sessionID !== 'string' || line.sessionID === '') return []
    sessionId = line.sessionID
    return [{ type: EventType.CUSTOM, name: OPENCODE_SESSION_EVENT, value: { sessionId } }]
  }

  function onStepFinish(part: OpencodePart): void {
    if (typeof part.reason === 'string') lastReason = part.reason
    const tokens: OpencodeTokens = isObject(part.tokens) ? part.tokens : {}
    const cache = isObject(tokens.cache) ? tokens.cache : {}
    // A step without token counts reported nothing; it must not turn into zeros.
    if ([tokens.input, tokens.output, tokens.reasoning, cache.read, cache.write].some(isCount)) {
      usage.steps++
      usage.input += count(tokens.input)
      usage.output += count(tokens.output)
      usage.reasoning += count(tokens.reasoning)
      usage.cacheRead += count(cache.read)
      usage.cacheWrite += count(cache.write)
      if (isCount(tokens.total)) {
        usage.totals++
        usage.total += tokens.total
      }
    }
    if (typeof part.cost === 'number' && Number.isFinite(part.cost)) {
      usage.cost += part.cost
      usage.costSeen = true
    }
  }

  function onTool(part: OpencodePart): StreamChunk[] {
    const state = isObject(part.state) ? part.state : {}
    if (state.status !== 'completed' && state.status !== 'error') return []
    const toolCallId = typeof part.callID === 'string' && part.callID !== '' ? part.callID : genId()
    const cliName = typeof part.tool === 'string' && part.tool !== '' ? part.tool : 'unknown'
    const name = appToolName(cliName)
    const input = state.input ?? {}
    const failed = state.status === 'error'
    const content = failed ? text(state.error) : text(state.output)
    // The CLI runs its own tools (and the bridge runs the app's); core must never try to execute them.
    const metadata = { providerExecuted: true, harness: 'opencode', ...(name !== cliName ? { cliToolName: cliName } : {}) }
    const out: StreamChunk[] = [
      { type: EventType.TOOL_CALL_START, toolCallId, toolCallName: name, toolName: name, metadata },
      { type: EventType.TOOL_CALL_ARGS, toolCallId, delta: JSON.stringify(input) },
      { type: EventType.TOOL_CALL_END, toolCallId, input },
      { type: EventType.TOOL_CALL_RESULT, messageId: genId(), toolCallId, content, role: 'tool' },
    ]
    const denial = failed ? deniedReason(content) : undefined
    if (denial) out.push({ type: EventType.CUSTOM, name: OPENCODE_PERMISSION_DENIED_EVENT, value: { toolCallId, toolName: name, input, reason: denial } })
    return out
  }

  function onError(error: OpencodeError | undefined): StreamChunk[] {
    closed = true
    const { message, code } = sessionError(error)
    return [runError(message, code)]
  }

  /** `RUN_FINISHED` with the usage summed so far; closes the run. */
  function finished(): StreamChunk {
    closed = true
    const reported = usageOf(usage)
    return { type: EventType.RUN_FINISHED, runId, threadId, finishReason: finishReason(lastReason), ...(options.model ? { model: options.model } : {}), ...(reported ? { usage: reported } : {}) }
  }

  function runError(message: string, code: string): StreamChunk {
    return { type: EventType.RUN_ERROR, runId, threadId, message, code, error: { message, code } }
  }

  return {
    start: () => [{ type: EventType.RUN_STARTED, runId, threadId }],
    push(raw) {
      if (closed || !isObject(raw)) return []
      const line = raw as OpencodeLine
      const out = noteSession(line)
      const part: OpencodePart = isObject(line.part) ? line.part : {}
      if (line.type === 'text') out.push(...textMessage(part.text, genId))
      else if (line.type === 'reasoning') out.push(...reasoningMessage(part.text, genId))
      else if (line.type === 'tool_use') out.push(...onTool(part))
      else if (line.type === 'step_finish') {
        onStepFinish(part)
        // The agent's last step: the run is over even if the CLI has not exited yet.
        if (part.reason === 'stop') out.push(finished())
      }
      else if (line.type === 'error') out.push(...onError(isObject(line.error) ? line.error : undefined))
      return out
    },
    finish(exit) {
      if (closed) return []
      closed = true
      const tail = typeof exit.stderrTail === 'string' ? stripAnsi(exit.stderrTail) : ''
      if (exit.exitCode === 0 && !exit.signal) return [finished()]
      const { message, code } = exitError({ ...exit, stderrTail: tail }, options.resumeSessionId)
      return [runError(message, code)]
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
export function translateOpencodeLines(lines: readonly unknown[], options: OpencodeTranslatorOptions, exit: OpencodeExit = { exitCode: 0, stderrTail: '' }): StreamChunk[] {
  const translator = createOpencodeTranslator(options)
  return [...translator.start(), ...lines.flatMap((line) => translator.push(line)), ...translator.finish(exit)]
}

function textMessage(value: unknown, genId: () => string): StreamChunk[] {
  if (typeof value !== 'string' || value === '') return []
  const messageId = genId()
  return [
    { type: EventType.TEXT_MESSAGE_START, messageId, role: 'assistant' },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: value },
    { type: EventType.TEXT_MESSAGE_END, messageId },
  ]
}

function reasoningMessage(value: unknown, genId: () => string): StreamChunk[] {
  if (typeof value !== 'string' || value === '') return []
  const messageId = genId()
  return [
    { type: EventType.REASONING_START, messageId },
    { type: EventType.REASONING_MESSAGE_START, messageId, role: 'reasoning' },
    { type: EventType.REASONING_MESSAGE_CONTENT, messageId, delta: value },
    { type: EventType.REASONING_MESSAGE_END, messageId },
    { type: EventType.REASONING_END, messageId },
  ]
}

function deniedReason(error: string): 'rule' | 'rejected' | undefined {
  if (error.startsWith(DENIED_BY_RULE)) return 'rule'
  if (error.startsWith(REJECTED)) return 'rejected'
  return undefined
}

/** The message and code of an `error` line: `api_error_<status>` for HTTP errors, else the error's name in snake case. */
function sessionError(error: OpencodeError | undefined): { message: string; code: string } {
  const data = isObject(error?.data) ? error!.data! : {}
  const name = typeof error?.name === 'string' && error.name !== '' ? error.name : 'UnknownError'
  const message = typeof data.message === 'string' && data.message.trim() !== '' ? data.message.trim() : `OpenCode reported ${name}.`
  const status = typeof data.statusCode === 'number' ? data.statusCode : undefined
  return { message, code: status ? `api_error_${status}` : snakeCase(name) }
}

function exitError(exit: OpencodeExit, resumeSessionId: string | undefined): { message: string; code: string } {
  const tail = exit.stderrTail.trim().split('\n').slice(-20).join('\n')
  if (NOT_FOUND_EXITS.has(exit.exitCode) || /(^|\n)(sh|bash|\S*sh): .*(not found|No such file or directory|Permission denied)/.test(exit.stderrTail)) {
    const message = 'The opencode CLI was not found in the sandbox. Install it in the workspace setup (e.g. `npm install -g opencode-ai`), bake it into the sandbox image, or pass opencodeText(model, { executable }) with its path.'
    return { message: tail ? `${message}\n${tail}` : message, code: 'cli_not_found' }
  }
  if (/Session not found/.test(exit.stderrTail)) {
    const which = resumeSessionId ? `session ${resumeSessionId}` : 'the session'
    return {
      message: `OpenCode could not resume ${which}: Session not found. The session is gone (sessions live in OpenCode's data directory under $HOME inside the sandbox that ran them); start a new session by leaving sessionId out of modelOptions.`,
      code: 'session_not_found',
    }
  }
  const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`
  return { message: `OpenCode ${how}.${tail ? `\n${tail}` : ' It wrote nothing to stderr.'}`, code: 'cli_exit' }
}

function finishReason(reason: string | undefined): 'stop' | 'length' | 'content_filter' | 'tool_calls' {
  if (reason === 'length') return 'length'
  if (reason === 'content-filter') return 'content_filter'
  if (reason === 'tool-calls') return 'tool_calls'
  return 'stop'
}

/**
 * The steps' usage as core's `TokenUsage`, or `undefined` when no step
 * reported token counts. OpenCode splits what the provider reported: `input`
 * is the uncached part, `cache.read`/`cache.write` the rest of the input,
 * `output` leaves out `reasoning`. So `promptTokens` and `completionTokens`
 * add them back; `totalTokens` is OpenCode's `total` when every step gave one.
 */
function usageOf(u: UsageSum): TokenUsage | undefined {
  if (u.steps === 0) return undefined
  const prompt = u.input + u.cacheRead + u.cacheWrite
  const completion = u.output + u.reasoning
  return {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: u.totals === u.steps ? u.total : prompt + completion,
    ...(u.cacheRead || u.cacheWrite ? { promptTokensDetails: { ...(u.cacheRead ? { cachedTokens: u.cacheRead } : {}), ...(u.cacheWrite ? { cacheWriteTokens: u.cacheWrite } : {}) } } : {}),
    ...(u.reasoning ? { completionTokensDetails: { reasoningTokens: u.reasoning } } : {}),
    ...(u.costSeen ? { cost: u.cost } : {}),
  }
}

/** The name the app registered for a bridged tool (`tanstack_get_weather` → `get_weather`); any other tool keeps OpenCode's name. */
function appToolName(cliName: string): string {
  return cliName.startsWith(BRIDGED_PREFIX) && cliName.length > BRIDGED_PREFIX.length ? cliName.slice(BRIDGED_PREFIX.length) : cliName
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

function count(value: unknown): number {
  return isCount(value) ? value : 0
}

function text(value: unknown): string {
  if (typeof value === 'string') return value
  return value === undefined || value === null ? '' : JSON.stringify(value)
}

function snakeCase(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/[^A-Za-z0-9]+/g, '_').toLowerCase()
}

function stripAnsi(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '')
}

function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
