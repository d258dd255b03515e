/**
 * Reads one `chat()` stream from the Claude Code adapter and turns it into
 * what a person watches: streamed reasoning and text, one line per tool call
 * and result, the session id, and the closing usage. It owns no process or
 * sandbox; it only consumes chunks. Invariant: a `RUN_ERROR` chunk always
 * becomes a thrown `DemoError` (`run-failed`) carrying the chunk's code.
 */
import type { StreamChunk } from '@tanstack/ai'
import { CLAUDE_CODE_SESSION_EVENT } from '@tanstack/ai-claude-code'
import { DemoError } from './errors.js'
import type { DemoReporter } from './reporter.js'

/** Token counts from `RUN_FINISHED`. */
export interface RunUsage {
  readonly inputTokens: number
  readonly outputTokens: number
}

/** What one run produced. */
export interface AgentRunOutcome {
  /** ms (on the caller's clock) of the first streamed model output: reasoning, text or a tool call. */
  readonly firstTokenAt: number | undefined
  readonly usage: RunUsage
  /** The Claude Code session id, for `modelOptions.sessionId` in a follow-up run. */
  readonly sessionId: string | undefined
  /** All assistant text, concatenated. */
  readonly text: string
  readonly toolCalls: number
}

/**
 * Consume a `chat()` stream, reporting as it goes.
 *
 * @param stream - The chunks from `chat({ adapter: claudeCodeText(…), … })`.
 * @param reporter - Observer of the run; may be `{}`.
 * @param at - The caller's clock in ms, used to timestamp events.
 * @throws DemoError `run-failed` on a `RUN_ERROR` chunk (its `code` is kept on the error).
 * @example
 * ```ts
 * const outcome = await consumeAgentRun(chat({ adapter, messages, middleware }), {}, () => performance.now())
 * ```
 */
export async function consumeAgentRun(stream: AsyncIterable<StreamChunk>, reporter: DemoReporter, at: () => number): Promise<AgentRunOutcome> {
  const calls = new Map<string, { name: string; args: string }>()
  let firstTokenAt: number | undefined
  let usage: RunUsage = { inputTokens: 0, outputTokens: 0 }
  let sessionId: string | undefined
  let text = ''
  let toolCalls = 0
  const firstToken = () => void (firstTokenAt ??= at())

  for await (const chunk of stream) {
    switch (chunk.type) {
      case 'REASONING_MESSAGE_CONTENT':
        firstToken()
        reporter.reasoning?.(at(), chunk.delta)
        break
      case 'TEXT_MESSAGE_CONTENT':
        firstToken()
        text += chunk.delta
        reporter.text?.(at(), chunk.delta)
        break
      case 'TEXT_MESSAGE_END':
      case 'REASONING_MESSAGE_END':
        reporter.messageEnd?.(at())
        break
      case 'TOOL_CALL_START':
        firstToken()
        calls.set(chunk.toolCallId, { name: chunk.toolCallName, args: '' })
        break
      case 'TOOL_CALL_ARGS': {
        const call = calls.get(chunk.toolCallId)
        if (call) call.args += chunk.delta
        break
      }
      case 'TOOL_CALL_END': {
        const call = calls.get(chunk.toolCallId)
        toolCalls++
        reporter.toolCall?.(at(), { id: chunk.toolCallId, name: call?.name ?? 'tool', input: chunk.input ?? parseArgs(call?.args ?? '') })
        break
      }
      case 'TOOL_CALL_RESULT':
        reporter.toolResult?.(at(), { id: chunk.toolCallId, name: calls.get(chunk.toolCallId)?.name ?? 'tool', content: chunk.content })
        break
      case 'CUSTOM':
        if (chunk.name === CLAUDE_CODE_SESSION_EVENT) {
          sessionId = (chunk.value as { sessionId: string }).sessionId
          reporter.session?.(at(), sessionId)
        }
        break
      case 'RUN_FINISHED':
        usage = usageOf(chunk.usage)
        break
      case 'RUN_ERROR':
        throw new DemoError('run-failed', `Claude Code run failed (${chunk.code ?? 'error'}): ${chunk.message}`, chunk.code ? { code: chunk.code } : {})
    }
  }
  return { firstTokenAt, usage, sessionId, text, toolCalls }
}

function parseArgs(raw: string): unknown {
  try {
    return JSON.parse(raw)
  } catch {
    return raw // partial or non-JSON arguments are shown as text
  }
}

/** Usage arrives as TanStack's `TokenUsage` or as AG-UI `usage[]` items; read either. */
function usageOf(usage: unknown): RunUsage {
  const items = (Array.isArray(usage) ? usage : usage ? [usage] : []) as Record<string, unknown>[]
  const sum = (...keys: string[]) => items.reduce((total, item) => total + (keys.map((key) => item[key]).find((v): v is number => typeof v === 'number') ?? 0), 0)
  return { inputTokens: sum('promptTokens', 'inputTokens'), outputTokens: sum('completionTokens', 'outputTokens') }
}
