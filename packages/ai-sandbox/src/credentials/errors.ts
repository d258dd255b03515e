/**
 * The one error family of the model proxy. A refusal the agent receives over
 * HTTP carries the message of one of these, in the upstream wire's error
 * format; `createModelProxy` throws one only when it cannot listen.
 * Invariant: a message never holds the real API key or the run token.
 */
import { SandboxError } from '../contracts/errors.js'

/**
 * Why the model proxy refused a request or failed.
 *
 * `unauthorized` (no run token, a wrong one, or one revoked: HTTP 401),
 * `budget-exceeded` (the run's token or cost budget was already reached:
 * HTTP 400, see `createModelProxy`), `unpriced-model` (a cost budget is set
 * and the request names a model with no price: HTTP 400),
 * `upstream-unreachable` (the model API could not be reached: HTTP 502),
 * `closed` (the proxy is closing: HTTP 503, or the answer in flight is cut),
 * `internal` (an unexpected failure inside the proxy: HTTP 500),
 * `listen-failed` (thrown by `createModelProxy`: the address cannot be bound).
 */
export type ModelProxyErrorReason = 'unauthorized' | 'budget-exceeded' | 'unpriced-model' | 'upstream-unreachable' | 'closed' | 'internal' | 'listen-failed'

/**
 * A model proxy refusal or failure. Branch on `reason`.
 *
 * @example
 * ```ts
 * try { await createModelProxy({ upstream, port: 80 }) }
 * catch (error) { if (ModelProxyError.isInstance(error) && error.reason === 'listen-failed') console.log(error.message) }
 * ```
 */
export class ModelProxyError extends SandboxError<ModelProxyErrorReason> {
  static override readonly brand: string = '@tanstack/ai-sandbox/error/ModelProxyError'
}
