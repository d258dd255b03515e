/**
 * Structured output for Claude Code (`chat({ outputSchema })`): wraps the run's
 * translator, reads `structured_output` from the `result` line and emits core's
 * `structured-output.complete` right before `RUN_FINISHED`, or ends with
 * `RUN_ERROR` `structured_output_invalid`. Pure; other chunks pass unchanged.
 * Source: `claude` 2.1.332 against aimock. Design notes: docs/design/harness-adapters.md
 */
import { convertSchemaToJsonSchema, EventType, type JSONSchema, type RunErrorEvent, type StreamChunk, type StructuredOutputCompleteEvent, type StructuredOutputStartEvent, type TextOptions } from '@tanstack/ai'
import type { HarnessTranslator } from '@tanstack/ai-sandbox'

/** The tool Claude Code gives the model under `--json-schema`; its accepted input is the structured output. */
export const CLAUDE_STRUCTURED_OUTPUT_TOOL = 'StructuredOutput'

/** The `RUN_ERROR` code of a run that produced no object matching `outputSchema`. */
export const STRUCTURED_OUTPUT_INVALID = 'structured_output_invalid'

/** The `result` subtype when the model failed the schema on every attempt. */
const RETRIES_EXHAUSTED = 'error_max_structured_output_retries'

/** The fields of a `result` line read here (`ClaudeLine` plus `structured_output`). */
interface ClaudeStructuredResult {
  type?: string
  parent_tool_use_id?: string | null
  /** The final text; with `--json-schema`, the accepted object as JSON. */
  result?: unknown
  /** The `StructuredOutput` tool's accepted input. Absent when the model never made a valid call. */
  structured_output?: unknown
}

/**
 * The JSON Schema a run was asked for, or `undefined` when it was not. The
 * chat engine passes `outputSchema` already converted; a Standard Schema
 * (zod) given to `chatStream` directly is converted here.
 *
 * @param options - `chatStream`'s options.
 * @returns The schema for `--json-schema`, or `undefined`.
 */
export function claudeOutputSchema(options: Pick<TextOptions, 'outputSchema'>): JSONSchema | undefined {
  return options.outputSchema === undefined ? undefined : convertSchemaToJsonSchema(options.outputSchema)
}

/**
 * Wrap a Claude Code translator for a run started with `--json-schema`.
 *
 * On the `result` line that ends the run: with `structured_output`, the chunks
 * are `CUSTOM` `structured-output.complete` (`{ object, raw }`, `raw` the
 * object as JSON) then the translator's `RUN_FINISHED`; without it, `RUN_ERROR` `structured_output_invalid`
 * replaces the `RUN_FINISHED`. The CLI's own `error_max_structured_output_retries`
 * error is reported with that code too, its message kept.
 *
 * @param translator - The run's translator (`createClaudeCodeTranslator`).
 * @returns A translator with the same `start`, `push` and `finish`.
 * @example
 * ```ts
 * translator: (ids) => withClaudeStructuredOutput(createClaudeCodeTranslator({ ...ids, model }))
 * ```
 */
export function withClaudeStructuredOutput(translator: HarnessTranslator): HarnessTranslator {
  return {
    start: () => translator.start(),
    push: (event) => settle(translator.push(event), resultLine(event)),
    finish: (exit) => settle(translator.finish(exit), undefined),
  }
}

/** The run's final chunks with the structured output in front of `RUN_FINISHED`, or the error in its place. */
function settle(chunks: readonly StreamChunk[], result: ClaudeStructuredResult | undefined): readonly StreamChunk[] {
  if (!chunks.some((chunk) => chunk.type === EventType.RUN_FINISHED || chunk.type === EventType.RUN_ERROR)) return chunks
  return chunks.flatMap((chunk): StreamChunk[] => {
    if (chunk.type === EventType.RUN_ERROR && chunk.code === RETRIES_EXHAUSTED) {
      return [invalid(chunk, `claude-code: the agent gave no output matching outputSchema: ${chunk.message}`)]
    }
    if (chunk.type !== EventType.RUN_FINISHED) return [chunk]
    if (result === undefined || !('structured_output' in result) || result.structured_output === undefined) {
      return [invalid(chunk, missingMessage(result))]
    }
    // start, then complete, with one message id: the order core's own adapters use.
    const messageId = `${chunk.runId}-structured-output`
    const start: StructuredOutputStartEvent = { type: EventType.CUSTOM, name: 'structured-output.start', value: { messageId } }
    const complete: StructuredOutputCompleteEvent = { type: EventType.CUSTOM, name: 'structured-output.complete', value: { object: result.structured_output, raw: JSON.stringify(result.structured_output) } }
    return [start, complete, chunk]
  })
}

/** A `RUN_ERROR` `structured_output_invalid` for the run `chunk` belongs to. */
function invalid(chunk: { runId?: string; threadId?: string }, message: string): RunErrorEvent {
  const code = STRUCTURED_OUTPUT_INVALID
  return { type: EventType.RUN_ERROR, ...(chunk.runId ? { runId: chunk.runId } : {}), ...(chunk.threadId ? { threadId: chunk.threadId } : {}), message, code, error: { message, code } }
}

function missingMessage(result: ClaudeStructuredResult | undefined): string {
  const text = typeof result?.result === 'string' ? result.result.trim() : ''
  const said = text === '' ? ' It gave no final text either.' : ` Its final text was: ${JSON.stringify(text.length > 300 ? `${text.slice(0, 300)}…` : text)}.`
  return `claude-code: the agent finished without calling the ${CLAUDE_STRUCTURED_OUTPUT_TOOL} tool, so there is no output matching outputSchema (Claude Code's --json-schema).${said} Ask for the result explicitly in the prompt, or retry the run.`
}

/** The top-level `result` line, or `undefined` for any other event. */
function resultLine(event: unknown): ClaudeStructuredResult | undefined {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return undefined
  const line = event as ClaudeStructuredResult
  return line.type === 'result' && !line.parent_tool_use_id ? line : undefined
}
