/**
 * Open tool calls of one harness run: which `TOOL_CALL_START`s have not yet
 * had their `TOOL_CALL_RESULT`, and the chunks that close them when the run
 * ends first, so no UI keeps an unresolved tool card. Pure bookkeeping over
 * the chunks the run emits; it never reads a CLI event.
 * Invariant: every call it reports as interrupted had a `TOOL_CALL_START` in
 * this run and no `TOOL_CALL_RESULT`.
 */
import { EventType, type StreamChunk } from '@tanstack/ai'

/** The `content` of the `TOOL_CALL_RESULT` that closes an interrupted call (JSON text). */
export interface InterruptedToolResult {
  /** Always `'interrupted'`. */
  status: 'interrupted'
  /** Why the call has no result, e.g. `the run ended before the tool call returned a result (timeout)`. */
  message: string
}

/** Tracks the tool calls a run opened; see {@link createOpenToolCalls}. */
export interface OpenToolCalls {
  /** Feed every chunk the run emits, in order. */
  observe: (chunk: StreamChunk) => void
  /** `TOOL_CALL_END` (when the arguments never ended) and `TOOL_CALL_RESULT` for each call still open, in start order; afterwards nothing is open. */
  close: (why: string) => StreamChunk[]
}

/**
 * Make the tracker for one run.
 *
 * @param genId - The run's id generator (message ids of the closing results).
 * @returns An {@link OpenToolCalls}.
 * @example
 * ```ts
 * const open = createOpenToolCalls(createRunScopedIdGen(runId))
 * for (const chunk of chunks) open.observe(chunk)
 * const closing = open.close('the run ended before the tool call returned a result (timeout)')
 * ```
 */
export function createOpenToolCalls(genId: () => string): OpenToolCalls {
  /** toolCallId -> whether its TOOL_CALL_END was seen. */
  const open = new Map<string, { ended: boolean }>()
  return {
    observe(chunk) {
      if (chunk.type === EventType.TOOL_CALL_START) open.set(chunk.toolCallId, { ended: false })
      else if (chunk.type === EventType.TOOL_CALL_END) {
        const call = open.get(chunk.toolCallId)
        if (call) call.ended = true
      } else if (chunk.type === EventType.TOOL_CALL_RESULT) open.delete(chunk.toolCallId)
    },
    close(why) {
      const out: StreamChunk[] = []
      const content = JSON.stringify({ status: 'interrupted', message: why } satisfies InterruptedToolResult)
      for (const [toolCallId, call] of open) {
        if (!call.ended) out.push({ type: EventType.TOOL_CALL_END, toolCallId, timestamp: Date.now() } as StreamChunk)
        out.push({ type: EventType.TOOL_CALL_RESULT, messageId: genId(), toolCallId, content, role: 'tool', timestamp: Date.now() } as StreamChunk)
      }
      open.clear()
      return out
    },
  }
}
