/**
 * Tool history of sandboxed runs: records a harness's provider-executed tool
 * calls into the transcript, marked, and strips marked calls from what the
 * next request sends. Invariant: only `providerMessages` is stripped. The
 * marker `{ sandboxObserved: true }` (spec 002) is a shared data format.
 * Design notes: docs/design/with-sandbox.md
 */
import type { ModelMessage, StreamChunk, ToolCall } from '@tanstack/ai'
import { isSandboxToolCall, SANDBOX_TOOL_CALL_KEY } from '../contracts/tool-call-marker.js'

interface RecordedCall {
  readonly id: string
  readonly name: string
  args: string
  readonly metadata: Record<string, unknown>
  result?: string
}

/** Records one run's provider-executed tool calls from the stream. */
export interface ToolHistory {
  /** See one model-stream chunk; returns the chunk to pass on (a harness `TOOL_CALL_START` gains the marker). */
  observe: (chunk: StreamChunk) => StreamChunk
  /** The messages for the calls seen since the last call (empty when none). */
  take: (createId: (prefix: string) => string) => ModelMessage[]
}

/** Start recording a run's tool history. */
export function createToolHistory(): ToolHistory {
  let calls = new Map<string, RecordedCall>()
  let firstAt: Date | undefined
  return {
    observe(chunk) {
      const c = chunk as unknown as Record<string, any>
      const toolCallId = typeof c.toolCallId === 'string' ? c.toolCallId : undefined
      if (toolCallId === undefined) return chunk
      if (c.type === 'TOOL_CALL_START') {
        if (c.metadata?.providerExecuted !== true) return chunk
        const metadata = { ...c.metadata, [SANDBOX_TOOL_CALL_KEY]: true }
        calls.set(toolCallId, { id: toolCallId, name: String(c.toolCallName ?? c.toolName ?? 'unknown'), args: '', metadata })
        firstAt ??= new Date()
        return { ...chunk, metadata } as StreamChunk
      }
      const call = calls.get(toolCallId)
      if (!call) return chunk
      if (c.type === 'TOOL_CALL_ARGS') call.args = typeof c.args === 'string' && c.args !== '' ? c.args : call.args + String(c.delta ?? '')
      else if (c.type === 'TOOL_CALL_END' && c.input !== undefined) call.args = JSON.stringify(c.input && typeof c.input === 'object' ? c.input : {})
      else if (c.type === 'TOOL_CALL_RESULT') call.result = typeof c.content === 'string' ? c.content : JSON.stringify(c.content ?? '')
      return chunk
    },
    take(createId) {
      if (calls.size === 0) return []
      const recorded = [...calls.values()]
      const createdAt = firstAt ?? new Date()
      calls = new Map()
      firstAt = undefined
      const toolCalls: ToolCall[] = recorded.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.args || '{}' }, metadata: call.metadata }))
      const marker = { [SANDBOX_TOOL_CALL_KEY]: true }
      return [
        { role: 'assistant', content: null, toolCalls, id: createId('msg'), createdAt, metadata: marker },
        ...recorded
          .filter((call) => call.result !== undefined)
          .map((call): ModelMessage => ({ role: 'tool', content: call.result!, toolCallId: call.id, name: call.name, metadata: marker })),
      ]
    },
  }
}

/**
 * `messages` without marked tool calls and their results, for the model
 * request. An assistant message left with neither content nor calls is dropped.
 *
 * @returns The stripped copy, or `undefined` when nothing was marked.
 */
export function withoutSandboxToolCalls(messages: readonly ModelMessage[]): ModelMessage[] | undefined {
  const strippedIds = new Set<string>()
  for (const message of messages) for (const call of message.toolCalls ?? []) if (isSandboxToolCall(call)) strippedIds.add(call.id)
  const markedToolMessage = (m: ModelMessage) => m.role === 'tool' && ((m.toolCallId !== undefined && strippedIds.has(m.toolCallId)) || isSandboxToolCall(m))
  if (strippedIds.size === 0 && !messages.some(markedToolMessage)) return undefined
  const out: ModelMessage[] = []
  for (const message of messages) {
    if (markedToolMessage(message)) continue
    if (message.role !== 'assistant' || !message.toolCalls?.some(isSandboxToolCall)) {
      out.push(message)
      continue
    }
    const { toolCalls, ...rest } = message
    const kept = toolCalls!.filter((call) => !isSandboxToolCall(call))
    const hasContent = typeof rest.content === 'string' ? rest.content !== '' : Array.isArray(rest.content) && rest.content.length > 0
    if (kept.length === 0 && !hasContent && !rest.thinking?.length) continue
    out.push(kept.length > 0 ? { ...rest, toolCalls: kept } : rest)
  }
  return out
}
