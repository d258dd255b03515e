/**
 * Token usage as each model API reports it, read from one JSON text: a whole
 * non-streamed response body, or the `data` of one server-sent event.
 * Pure functions; they never throw on an unexpected shape (they find nothing).
 * Invariant: counts are the wire's own figures, normalised to the four kinds
 * of {@link TokenCounts}; nothing is estimated.
 */
import type { ModelWire } from './model-proxy-options.js'

/** Token counts of one response, or of a run. */
export interface TokenCounts {
  /** Input tokens neither read from nor written to a prompt cache. */
  inputTokens: number
  /** Output tokens (reasoning tokens included). */
  outputTokens: number
  /** Input tokens read from a prompt cache. */
  cacheReadTokens: number
  /** Input tokens written to a prompt cache (reported by Anthropic only). */
  cacheWriteTokens: number
}

/**
 * What one JSON text says about usage: the model when it names one, and the
 * counts it carries. On the Anthropic wire a `message_delta` carries only the
 * counts that changed, so `counts` may be partial; each figure is the
 * response's total so far, never an increment.
 */
export interface UsageReading {
  model: string | undefined
  counts: Partial<TokenCounts>
}

/**
 * Usage in a non-streamed response body (`stream` absent or false).
 *
 * Every wire puts `usage` and `model` at the top of the body: the Anthropic
 * Messages API (https://docs.anthropic.com/en/api/messages, "usage"), the
 * OpenAI Responses API (https://platform.openai.com/docs/api-reference/responses/object)
 * and chat completions (https://platform.openai.com/docs/api-reference/chat/object).
 *
 * @param wire - The upstream's API.
 * @param body - The body, JSON text.
 * @returns The reading, or `undefined` when the body has no usage object (an error body, a model list, not JSON).
 */
export function usageFromBody(wire: ModelWire, body: string): UsageReading | undefined {
  const object = record(parseJson(body))
  return reading(wire, stringOf(object?.model), object?.usage)
}

/**
 * Usage in the `data` of one server-sent event of a streamed response.
 *
 * - anthropic-messages: `message_start` carries `message.usage` (input and
 *   cache counts, a first output count) and `message_delta` carries `usage`
 *   whose counts are cumulative ("The token counts shown in the usage field of
 *   the message_delta event are cumulative":
 *   https://docs.anthropic.com/en/docs/build-with-claude/streaming).
 * - openai-responses: the terminal event (`response.completed`, and also
 *   `response.incomplete` and `response.failed`, which are billed too)
 *   carries the whole `response` with its `usage`
 *   (https://platform.openai.com/docs/api-reference/responses-streaming).
 * - openai-chat: the chunk whose `usage` is not null, the last one before
 *   `[DONE]` when the request set `stream_options.include_usage`
 *   (https://platform.openai.com/docs/api-reference/chat-streaming). A stream
 *   without that option reports no usage at all.
 *
 * @param wire - The upstream's API.
 * @param data - The event's `data` field, JSON text (or `[DONE]`).
 * @returns The reading, or `undefined` when the event carries no usage.
 */
export function usageFromEvent(wire: ModelWire, data: string): UsageReading | undefined {
  const event = record(parseJson(data))
  if (event === undefined) return undefined
  switch (wire) {
    case 'anthropic-messages': {
      if (event.type === 'message_start') {
        const message = record(event.message)
        return reading(wire, stringOf(message?.model), message?.usage)
      }
      return event.type === 'message_delta' ? reading(wire, undefined, event.usage) : undefined
    }
    case 'openai-responses': {
      if (event.type !== 'response.completed' && event.type !== 'response.incomplete' && event.type !== 'response.failed') return undefined
      const response = record(event.response)
      return reading(wire, stringOf(response?.model), response?.usage)
    }
    case 'openai-chat':
      return reading(wire, stringOf(event.model), event.usage)
  }
}

/** The counts of a wire's `usage` object, or `undefined` when there is none. */
function reading(wire: ModelWire, model: string | undefined, usageValue: unknown): UsageReading | undefined {
  const usage = record(usageValue)
  if (usage === undefined) return undefined
  return { model, counts: wire === 'anthropic-messages' ? anthropicCounts(usage) : openAiCounts(wire, usage) }
}

/**
 * Anthropic: `input_tokens` already leaves out cached tokens, reported apart as
 * `cache_read_input_tokens` and `cache_creation_input_tokens`
 * (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching). Only the fields present are returned.
 */
function anthropicCounts(usage: Record<string, unknown>): Partial<TokenCounts> {
  const counts: Partial<TokenCounts> = {}
  const set = (key: keyof TokenCounts, value: unknown) => {
    const count = countOf(value)
    if (count !== undefined) counts[key] = count
  }
  set('inputTokens', usage.input_tokens)
  set('outputTokens', usage.output_tokens)
  set('cacheReadTokens', usage.cache_read_input_tokens)
  set('cacheWriteTokens', usage.cache_creation_input_tokens)
  return counts
}

/**
 * OpenAI: the input count includes the cached tokens, given apart in
 * `input_tokens_details.cached_tokens` (Responses) or
 * `prompt_tokens_details.cached_tokens` (chat); they are moved to
 * `cacheReadTokens`. Chat names its counts `prompt_tokens` and `completion_tokens`.
 */
function openAiCounts(wire: ModelWire, usage: Record<string, unknown>): TokenCounts {
  const chat = wire === 'openai-chat'
  const input = countOf(chat ? usage.prompt_tokens : usage.input_tokens) ?? 0
  const cached = Math.min(input, countOf(record(chat ? usage.prompt_tokens_details : usage.input_tokens_details)?.cached_tokens) ?? 0)
  return { inputTokens: input - cached, outputTokens: countOf(chat ? usage.completion_tokens : usage.output_tokens) ?? 0, cacheReadTokens: cached, cacheWriteTokens: 0 }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined // `[DONE]`, a truncated or mislabelled body: no usage in it
  }
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

function countOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined
}
