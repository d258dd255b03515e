/**
 * `createModelProxy`: one run's reverse proxy in front of a model API, a hono
 * app served by @hono/node-server. It takes the run token in place of an API
 * key, checks the budget, forwards with the real key (hono's `proxy()`),
 * streams the answer back unchanged and counts usage from it on the way.
 * Invariants: nothing reaches the model without the token, after a budget
 * refusal, or after `revoke()`; the real key is never in what it returns.
 * Design notes: docs/design/model-proxy.md
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import { Hono } from 'hono'
import { proxy } from 'hono/proxy'
import { authorized, digest, tokenMatches } from '../bridge/bearer.js'
import { createSecretScrubber } from '../secrets/secret-scrubber.js'
import { checkBudget } from './budget.js'
import { ModelProxyError } from './errors.js'
import { forwardHeaders } from './forward-headers.js'
import { meteredBody } from './metered-body.js'
import { parseModelProxyOptions, type ModelProxyOptions } from './model-proxy-options.js'
import { createUsageMeter, type BudgetExceeded, type ModelUsageTotals } from './usage-meter.js'
import { wireErrorResponse } from './wire-errors.js'

/** A running model proxy. */
export interface ModelProxy {
  /** The base URL to give the agent in place of the model API's, e.g. `http://127.0.0.1:41234` (no trailing `/`). */
  readonly url: string
  /** The port it listens on. */
  readonly port: number
  /** The run token to give the agent as its API key: 32 random bytes, base64url. Sent as `x-api-key` or `Authorization: Bearer`. */
  readonly token: string
  /** The run's usage so far, as the model API reported it (a copy). */
  usage: () => ModelUsageTotals
  /** Refuse the token from now on (401); the proxy keeps listening. Idempotent. Answers already streaming go on. */
  revoke: () => void
  /** Revoke the token, cut answers in flight, drop connections and stop listening (the port is free when it resolves). Idempotent. */
  close: () => Promise<void>
}

/**
 * Start a model proxy for one run.
 *
 * Each request must carry the run token as `x-api-key` or as
 * `Authorization: Bearer` (compared in constant time); otherwise it is
 * answered 401 and not forwarded. Then the budget is checked (see
 * `ModelBudget`): a refusal is answered in the wire's error format, HTTP 400
 * with type `budget_exceeded` (400 because no agent CLI retries it; see
 * wire-errors.ts), and recorded as `usage().budgetExceeded`. Otherwise the
 * request goes to `upstream.baseUrl` + its path and query, with its method,
 * body and headers, less the token and the hop-by-hop headers, plus the real
 * key (`x-api-key` for anthropic-messages, `Authorization: Bearer` for the
 * OpenAI wires). The answer comes back with its status and headers (less the
 * hop-by-hop ones and `content-encoding`: it is decoded on the way) and its
 * body byte for byte as it arrives, read for usage on the way (see
 * `usageFromEvent`, `usageFromBody`). An unreachable upstream is answered 502.
 *
 * @param options - See {@link ModelProxyOptions}.
 * @returns The running proxy; call `close()` when the run ends.
 * @throws SandboxConfigError naming the field (e.g. `createModelProxy.budget.prices`) for an invalid option.
 * @throws UnknownSecretError when `upstream.apiKey` is a reference not made by `createSecrets`.
 * @throws ModelProxyError `listen-failed` when the address cannot be bound.
 * @example
 * ```ts
 * const modelProxy = await createModelProxy({
 *   upstream: { wire: 'anthropic-messages', baseUrl: 'https://api.anthropic.com', apiKey: secrets.ANTHROPIC_API_KEY },
 *   budget: { maxTokens: 200_000 },
 * })
 * try { // run the agent with ANTHROPIC_BASE_URL=modelProxy.url and ANTHROPIC_API_KEY=modelProxy.token
 * } finally { await modelProxy.close() }
 * console.log(modelProxy.usage().totalTokens)
 * ```
 */
export async function createModelProxy(options: ModelProxyOptions): Promise<ModelProxy> {
  const { wire, baseUrl, apiKey, budget, host, port } = parseModelProxyOptions(options)
  const token = randomBytes(32).toString('base64url')
  let expected: Buffer | undefined = digest(token)
  const meter = createUsageMeter(budget.prices)
  let budgetExceeded: BudgetExceeded | undefined
  const scrub = createSecretScrubber([
    ['MODEL_API_KEY', apiKey],
    ['MODEL_PROXY_TOKEN', token],
  ])

  const app = new Hono()
  app.use(async (c, next) => {
    const accepted = expected !== undefined && (tokenMatches(c.req.header('x-api-key'), expected) || authorized(c.req.header('authorization') ?? null, expected))
    if (!accepted) return wireErrorResponse(wire, new ModelProxyError('unauthorized', 'Unauthorized: the model proxy takes the run token as "x-api-key: <token>" or "Authorization: Bearer <token>"; a token is refused once its run has ended.'))
    await next()
  })
  app.all('*', async (c) => {
    const request = c.req.raw
    const body = request.method === 'GET' || request.method === 'HEAD' ? undefined : await request.arrayBuffer()
    const requestModel = modelOf(body)
    const refusal = checkBudget(budget, meter.totals(), requestModel)
    if (refusal) {
      budgetExceeded ??= refusal.exceeded
      return wireErrorResponse(wire, refusal.error)
    }
    const { pathname, search } = new URL(request.url)
    let upstream: Response
    try {
      upstream = await proxy(`${baseUrl}${pathname}${search}`, {
        method: request.method,
        headers: forwardHeaders(request.headers, wire, apiKey),
        ...(body && body.byteLength > 0 ? { body } : {}),
        // Fires when the agent's connection closes, close() included: the upstream request is dropped with it.
        signal: request.signal,
      })
    } catch (error) {
      if (request.signal.aborted) return wireErrorResponse(wire, new ModelProxyError('closed', 'The request was dropped: its connection closed.'))
      return wireErrorResponse(wire, new ModelProxyError('upstream-unreachable', `The model proxy could not reach the model API at ${new URL(baseUrl).origin} (${failureOf(error)}).`))
    }
    return new Response(meteredBody(upstream, wire, meter.response(requestModel)), { status: upstream.status, statusText: upstream.statusText, headers: upstream.headers })
  })
  app.onError((error) => wireErrorResponse(wire, new ModelProxyError('internal', `The model proxy failed: ${scrub.text(String(error))}`)))

  const server = createServer(getRequestListener(app.fetch, { overrideGlobalObjects: false }))
  await listen(server, host, port)
  const bound = (server.address() as AddressInfo).port
  let closed: Promise<void> | undefined
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    port: bound,
    token,
    usage: () => ({ ...meter.totals(), ...(budgetExceeded ? { budgetExceeded: { ...budgetExceeded } } : {}) }),
    revoke: () => {
      expected = undefined
    },
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        expected = undefined
        server.close(() => resolve())
        // Each request's signal fires as its connection closes, which drops its upstream request. (Aborting upstream
        // first would cut answers whose connections are still open, which @hono/node-server logs.)
        server.closeAllConnections()
      })),
  }
}

/** The `model` field of a JSON request body, when there is one. */
function modelOf(body: ArrayBuffer | undefined): string | undefined {
  if (!body || body.byteLength === 0) return undefined
  try {
    const model = (JSON.parse(new TextDecoder().decode(body)) as { model?: unknown } | null)?.model
    return typeof model === 'string' && model !== '' ? model : undefined
  } catch {
    return undefined // not JSON: a request the budget cannot attribute to a model
  }
}

/** A short reason for a failed fetch: the system error code (`ECONNREFUSED`) or the error's message. */
function failureOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause
  if (typeof cause?.code === 'string') return cause.code
  return error instanceof Error ? error.message : String(error)
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      reject(new ModelProxyError('listen-failed', `The model proxy could not listen on ${host}:${port} (${error.code ?? error.message}). Pass an address of this machine the sandbox can reach, and a free port or 0.`, { cause: error }))
    })
    server.listen(port, host, () => resolve())
  })
}
