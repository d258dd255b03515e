/**
 * The headers a request carries upstream: the agent's own, less the run token,
 * the hop-by-hop headers (RFC 9110 section 7.6.1) and what the new connection
 * sets itself, plus the real key where the wire expects it. Pure.
 * Invariant: the run token never leaves the proxy, whichever header carried it.
 */
import type { ModelWire } from './model-proxy-options.js'

/**
 * Headers that belong to one connection, not to the request. Like hono's
 * `proxy()` by default, the names the agent's own `Connection` header lists
 * are not dropped (a client could name any header there).
 */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']

/** Credential headers the agent may send the run token in; none of them goes upstream. */
const CREDENTIALS = ['authorization', 'x-api-key', 'api-key']

/**
 * The upstream request's headers.
 *
 * The key goes where each API reads it: `x-api-key` for the Anthropic
 * Messages API (https://docs.anthropic.com/en/api/overview, "Authentication"),
 * `Authorization: Bearer` for the OpenAI APIs
 * (https://platform.openai.com/docs/api-reference/authentication).
 *
 * @param incoming - The agent's request headers.
 * @param wire - The upstream's API.
 * @param apiKey - The real key.
 * @returns New headers; `incoming` is not changed.
 */
export function forwardHeaders(incoming: Headers, wire: ModelWire, apiKey: string): Headers {
  const headers = new Headers(incoming)
  for (const name of [...HOP_BY_HOP, ...CREDENTIALS, 'host', 'content-length']) headers.delete(name)
  if (wire === 'anthropic-messages') headers.set('x-api-key', apiKey)
  else headers.set('authorization', `Bearer ${apiKey}`)
  return headers
}
