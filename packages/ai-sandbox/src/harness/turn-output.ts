/**
 * The gate every chunk of a harness turn passes on its way out: it closes the
 * tool calls still open and reports a bridge the agent never contacted before
 * the terminal chunk, lets nothing through after it, drops a second result of
 * one tool call, and raises the `harness.integrity` events. Its fields are the
 * turn's output state, named. Source: docs/harnesses.md "What the stream can
 * be trusted with".
 */
import { EventType, type StreamChunk, type TextOptions } from '@tanstack/ai'
import { isBridgeUnavailableChunk, TOOL_BRIDGE_UNAVAILABLE_EVENT } from '../bridge/bridge-events.js'
import { HARNESS_INTEGRITY_EVENT, type HarnessLaunch } from './harness-launch.js'
import { createOpenToolCalls } from './open-tool-calls.js'

/** What the gate needs of its turn. */
interface TurnOutputInput {
  readonly harness: string
  readonly runId: string
  readonly options: TextOptions
  readonly genId: () => string
  readonly launch: Extract<HarnessLaunch, { command: string }>
}

/** One turn's output state and the gate its chunks pass (see the module header). */
export class TurnOutput {
  /** A `RUN_FINISHED` or `RUN_ERROR` went out: the stream is over, nothing more passes. */
  terminal = false
  /** A translator was replaced after events followed a final event: `CUSTOM` chunks it repeats are dropped. */
  translatorReplaced = false
  private bridgeReported = false
  private readonly open
  /** Tool calls that got their result. */
  private readonly resulted = new Set<string>()
  /** `CUSTOM` chunks already sent (name and value). */
  private readonly sentCustom = new Set<string>()

  constructor(private readonly input: TurnOutputInput) {
    this.open = createOpenToolCalls(input.genId)
  }

  /** The chunks to send for `chunks`, in order; empty once the stream is over. */
  emit(chunks: readonly StreamChunk[]): StreamChunk[] {
    const { harness, runId, options, launch } = this.input
    const out: StreamChunk[] = []
    for (const chunk of chunks) {
      if (this.terminal) break
      if (chunk.type === EventType.TOOL_CALL_RESULT) {
        if (this.resulted.has(chunk.toolCallId)) {
          out.push(this.integrity('duplicate-tool-result', `the CLI reported a second result for tool call ${chunk.toolCallId}; it was dropped, and the first one may not be the CLI's`, { toolCallId: chunk.toolCallId }))
          continue
        }
        this.resulted.add(chunk.toolCallId)
      }
      if (chunk.type === EventType.CUSTOM && chunk.name !== HARNESS_INTEGRITY_EVENT) {
        const key = `${chunk.name}\u0000${JSON.stringify(chunk.value) ?? ''}`
        if (this.translatorReplaced && this.sentCustom.has(key)) continue
        this.sentCustom.add(key)
      }
      if (isBridgeUnavailableChunk(chunk)) {
        this.bridgeReported = true
        options.logger.warn(`${harness}: ${(chunk.value as { reason?: string }).reason ?? 'the host tool bridge is not available to the agent'}`)
      }
      if (chunk.type === EventType.RUN_FINISHED || chunk.type === EventType.RUN_ERROR) {
        this.terminal = true
        out.push(...this.open.close(`the run ended before the tool call returned a result (${chunk.type === EventType.RUN_ERROR ? 'the run failed' : 'the agent finished without it'})`))
        const { bridge } = launch
        if (chunk.type === EventType.RUN_FINISHED && bridge && launch.bridgeContact !== 'on-call' && !this.bridgeReported && !bridge.contacted()) out.push(silentBridgeChunk(harness, options))
        if (chunk.type === EventType.RUN_FINISHED && chunk.usage === undefined) options.logger.provider(`${harness}: the CLI reported no token usage for run ${runId}, so RUN_FINISHED carries none`)
      }
      this.open.observe(chunk)
      out.push(harnessFinish(chunk))
    }
    return out
  }

  /** A `harness.integrity` chunk (also logged as a warning). */
  integrity(kind: string, message: string, extra: Record<string, unknown> = {}): StreamChunk {
    this.input.options.logger.warn(`${this.input.harness}: ${message}`)
    return { type: EventType.CUSTOM, name: HARNESS_INTEGRITY_EVENT, value: { kind, message, ...extra }, timestamp: Date.now() }
  }
}

/** Whether `chunk` ends a run. */
export function isTerminalChunk(chunk: StreamChunk): boolean {
  return chunk.type === EventType.RUN_FINISHED || chunk.type === EventType.RUN_ERROR
}

/** When `now` reports fewer total tokens than `before` (both with usage): the two totals. */
export function usageDecreased(before: StreamChunk, now: StreamChunk): { before: number; now: number } | undefined {
  const [a, b] = [totalTokens(before), totalTokens(now)]
  return a !== undefined && b !== undefined && b < a ? { before: a, now: b } : undefined
}

/** Total tokens of a `RUN_FINISHED`'s usage, or `undefined`. */
function totalTokens(chunk: StreamChunk): number | undefined {
  const usage = (chunk as { usage?: { totalTokens?: number; promptTokens?: number; completionTokens?: number } }).usage
  if (!usage) return undefined
  return usage.totalTokens ?? (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0)
}

/**
 * A harness runs its tools inside the CLI (bridged ones included, which carry
 * the app's tool names): a `RUN_FINISHED` with `finishReason: 'tool_calls'`
 * would make `chat()` execute them a second time on the host, so it becomes `stop`.
 */
function harnessFinish(chunk: StreamChunk): StreamChunk {
  return chunk.type === EventType.RUN_FINISHED && chunk.finishReason === 'tool_calls' ? { ...chunk, finishReason: 'stop' } : chunk
}

/** The warning chunk for a bridge the agent never contacted although the run finished. */
function silentBridgeChunk(harness: string, options: TextOptions): StreamChunk {
  const reason = `the agent never contacted the host tool bridge (MCP server "tanstack"), so the chat() tools were not available to it in this run. Check that the sandbox can reach the host (see docs/tools.md).`
  options.logger.warn(`${harness}: ${reason}`)
  return { type: EventType.CUSTOM, name: TOOL_BRIDGE_UNAVAILABLE_EVENT, value: { server: 'tanstack', status: 'not-contacted', reason }, timestamp: Date.now() }
}
