/**
 * One model call per wire, as the agent CLIs make them (Claude Code: the
 * Anthropic Messages API; Codex: the OpenAI Responses API; OpenCode: chat
 * completions), sent with real fetch to a base URL: aimock directly, or the
 * model proxy in front of it.
 */
import type { ModelWire } from '../../src/internal.js'

export const WIRES: readonly ModelWire[] = ['anthropic-messages', 'openai-responses', 'openai-chat']

/** The model each wire's call names (aimock answers with the same name). */
export const MODEL: Record<ModelWire, string> = { 'anthropic-messages': 'claude-test', 'openai-responses': 'gpt-test', 'openai-chat': 'gpt-chat-test' }

const PATH: Record<ModelWire, string> = { 'anthropic-messages': '/v1/messages', 'openai-responses': '/v1/responses', 'openai-chat': '/v1/chat/completions' }

function bodyOf(wire: ModelWire, stream: boolean, text: string, model: string): object {
  switch (wire) {
    case 'anthropic-messages':
      return { model, max_tokens: 64, messages: [{ role: 'user', content: text }], stream }
    case 'openai-responses':
      return { model, input: text, stream }
    case 'openai-chat':
      return { model, messages: [{ role: 'user', content: text }], stream, ...(stream ? { stream_options: { include_usage: true } } : {}) }
  }
}

/** The key header as the wire's CLI sends it: `x-api-key` for Anthropic, `Authorization: Bearer` for OpenAI. */
export function keyHeader(wire: ModelWire, key: string): Record<string, string> {
  return wire === 'anthropic-messages' ? { 'x-api-key': key } : { authorization: `Bearer ${key}` }
}

/** Options of {@link callModel}. */
export interface CallOptions {
  stream?: boolean
  /** Credential headers; default none. */
  headers?: Record<string, string>
  /** The user message; default `hello`, which the fixture answers. */
  text?: string
  /** Default {@link MODEL} of the wire. */
  model?: string
}

/** POST one call to `baseUrl` + the wire's path. */
export function callModel(baseUrl: string, wire: ModelWire, options: CallOptions = {}): Promise<Response> {
  const { stream = false, headers = {}, text = 'hello', model = MODEL[wire] } = options
  return fetch(`${baseUrl}${PATH[wire]}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(wire === 'anthropic-messages' ? { 'anthropic-version': '2023-06-01' } : {}), ...headers },
    body: JSON.stringify(bodyOf(wire, stream, text, model)),
  })
}

/**
 * A body with aimock's random item ids (`msg-` and 16 base64url characters,
 * on the Responses wire) made equal; the fixture fixes every other id and time.
 */
export function withoutRandomIds(text: string): string {
  return text.replace(/"msg-[A-Za-z0-9_-]{16}"/g, '"msg-<random>"')
}
