/**
 * The proxy's own refusals in the upstream wire's error format, so the agent
 * CLI reports them as it reports the model API's errors: the Anthropic shape
 * `{ type: 'error', error: { type, message } }`
 * (https://docs.anthropic.com/en/api/errors) or the OpenAI shape
 * `{ error: { message, type, param, code } }`
 * (https://platform.openai.com/docs/guides/error-codes).
 * Invariant: the body holds the error's message and nothing else of the request.
 */
import type { ModelProxyError, ModelProxyErrorReason } from './errors.js'
import type { ModelWire } from './model-proxy-options.js'

/**
 * HTTP status and error types by reason.
 *
 * `budget-exceeded` is a 400: the status none of the agents' HTTP clients
 * retries. The Anthropic and OpenAI SDKs retry 408, 409, 429 and 5xx ("Certain
 * errors will be automatically retried 2 times by default ... 408 Request
 * Timeout, 409 Conflict, 429 Rate Limit, and >=500 Internal errors", both SDKs'
 * READMEs, "Retries"); the AI SDK under OpenCode retries the same set
 * (`APICallError.isRetryable`); Codex retries 429 and 5xx (`RetryOn` in
 * codex-rs/codex-client/src/retry.rs). A 429 would be retried into the same
 * refusal several times with backoff before the CLI gave up.
 */
const REFUSALS: Record<ModelProxyErrorReason, { status: number; anthropicType: string; openAiType: string; code: string }> = {
  unauthorized: { status: 401, anthropicType: 'authentication_error', openAiType: 'invalid_request_error', code: 'invalid_api_key' },
  'budget-exceeded': { status: 400, anthropicType: 'budget_exceeded', openAiType: 'budget_exceeded', code: 'budget_exceeded' },
  'unpriced-model': { status: 400, anthropicType: 'invalid_request_error', openAiType: 'invalid_request_error', code: 'unpriced_model' },
  'upstream-unreachable': { status: 502, anthropicType: 'api_error', openAiType: 'server_error', code: 'upstream_unreachable' },
  closed: { status: 503, anthropicType: 'api_error', openAiType: 'server_error', code: 'proxy_closed' },
  internal: { status: 500, anthropicType: 'api_error', openAiType: 'server_error', code: 'proxy_error' },
  'listen-failed': { status: 500, anthropicType: 'api_error', openAiType: 'server_error', code: 'proxy_error' },
}

/**
 * The response that reports `error` to the agent.
 * @param wire - The upstream's API, whose error shape is used.
 * @param error - The refusal; its `reason` picks the status and types, its `message` is the text.
 * @returns A JSON response: 401 `unauthorized`, 400 `budget-exceeded` and `unpriced-model`, 502
 *   `upstream-unreachable`, 503 `closed`, 500 otherwise.
 */
export function wireErrorResponse(wire: ModelWire, error: ModelProxyError): Response {
  const { status, anthropicType, openAiType, code } = REFUSALS[error.reason]
  const body = wire === 'anthropic-messages' ? { type: 'error', error: { type: anthropicType, message: error.message } } : { error: { message: error.message, type: openAiType, param: null, code } }
  return Response.json(body, { status })
}
