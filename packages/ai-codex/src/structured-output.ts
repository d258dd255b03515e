/**
 * Structured output for Codex (`chat({ outputSchema })`): wraps the run's
 * translator, keeps the last `agent_message` and at `RUN_FINISHED` parses it
 * (strict `JSON.parse`) into core's `structured-output.complete`, or ends with
 * `RUN_ERROR` `structured_output_invalid`. Pure; other chunks pass unchanged.
 * Source: `codex` 0.171.0 against aimock. Design notes: docs/design/harness-adapters.md
 */
import { convertSchemaToJsonSchema, EventType, type JSONSchema, type RunErrorEvent, type StreamChunk, type StructuredOutputCompleteEvent, type StructuredOutputStartEvent, type TextOptions } from '@tanstack/ai'
import type { HarnessTranslator } from '@tanstack/ai-sandbox'

/** The `RUN_ERROR` code of a run whose answer is not a JSON value. */
export const STRUCTURED_OUTPUT_INVALID = 'structured_output_invalid'

/**
 * The JSON Schema a run was asked for, or `undefined` when it was not, in the
 * form the Responses API's strict mode accepts (every property required,
 * optional ones nullable, no additional properties). The chat engine passes
 * `outputSchema` already in that form (converting again changes nothing); a
 * Standard Schema (zod) given to `chatStream` directly is converted here.
 *
 * @param options - `chatStream`'s options.
 * @returns The schema for the `--output-schema` file, or `undefined`.
 */
export function codexOutputSchema(options: Pick<TextOptions, 'outputSchema'>): JSONSchema | undefined {
  return options.outputSchema === undefined ? undefined : convertSchemaToJsonSchema(options.outputSchema, { forStructuredOutput: true })
}

/**
 * Wrap a Codex translator for a run started with `--output-schema`.
 *
 * The answer is the text of the last `item.completed` `agent_message` before
 * the turn ended. At the `RUN_FINISHED`: when that text parses as JSON, the
 * chunks are `CUSTOM` `structured-output.complete` (`{ object, raw }`, `raw`
 * the text as the agent wrote it) then the `RUN_FINISHED`; when there is no
 * such message or it is not JSON, `RUN_ERROR` `structured_output_invalid`
 * replaces the `RUN_FINISHED`. Whether the object matches the schema is the
 * chat engine's check (`chat({ outputSchema })` validates it).
 *
 * @param translator - The run's translator (`createCodexTranslator`).
 * @returns A translator with the same `start`, `push` and `finish`.
 * @example
 * ```ts
 * translator: (ids) => withCodexStructuredOutput(createCodexTranslator({ ...ids, model }))
 * ```
 */
export function withCodexStructuredOutput(translator: HarnessTranslator): HarnessTranslator {
  let answer: string | undefined
  return {
    start: () => translator.start(),
    push(event) {
      answer = agentMessageText(event) ?? answer
      return settle(translator.push(event), answer)
    },
    finish: (exit) => settle(translator.finish(exit), answer),
  }
}

/** The run's final chunks with the structured output in front of `RUN_FINISHED`, or the error in its place. */
function settle(chunks: readonly StreamChunk[], answer: string | undefined): readonly StreamChunk[] {
  if (!chunks.some((chunk) => chunk.type === EventType.RUN_FINISHED)) return chunks
  return chunks.flatMap((chunk): StreamChunk[] => {
    if (chunk.type !== EventType.RUN_FINISHED) return [chunk]
    if (answer === undefined) return [invalid(chunk, 'codex: the agent ended its turn without a final message, so there is no output matching outputSchema (--output-schema). Retry the run, or ask for the result explicitly in the prompt.')]
    let object: unknown
    try {
      object = JSON.parse(answer)
    } catch (error) {
      const excerpt = answer.length > 300 ? `${answer.slice(0, 300)}…` : answer
      return [invalid(chunk, `codex: the agent's final message is not JSON (${error instanceof Error ? error.message : String(error)}), so there is no output matching outputSchema (--output-schema). It was: ${JSON.stringify(excerpt)}. Check that the model provider honours the Responses API's text.format json_schema.`)]
    }
    // start, then complete: the order core's own adapters use; the engine takes the message id from start.
    const start: StructuredOutputStartEvent = { type: EventType.CUSTOM, name: 'structured-output.start', value: { messageId: `${chunk.runId}-structured-output` } }
    const complete: StructuredOutputCompleteEvent = { type: EventType.CUSTOM, name: 'structured-output.complete', value: { object, raw: answer } }
    return [start, complete, chunk]
  })
}

/** A `RUN_ERROR` `structured_output_invalid` for the run `chunk` belongs to. */
function invalid(chunk: { runId?: string; threadId?: string }, message: string): RunErrorEvent {
  const code = STRUCTURED_OUTPUT_INVALID
  return { type: EventType.RUN_ERROR, ...(chunk.runId ? { runId: chunk.runId } : {}), ...(chunk.threadId ? { threadId: chunk.threadId } : {}), message, code, error: { message, code } }
}

/** The text of an `item.completed` `agent_message` line, or `undefined` for any other event. */
function agentMessageText(event: unknown): string | undefined {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return undefined
  const line = event as { type?: unknown; item?: { type?: unknown; text?: unknown } | null }
  if (line.type !== 'item.completed' || typeof line.item !== 'object' || line.item === null) return undefined
  return line.item.type === 'agent_message' && typeof line.item.text === 'string' ? line.item.text : undefined
}
