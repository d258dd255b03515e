/**
 * The options of `createModelProxy`: their types, the zod schema that is the
 * single source of their validation messages, and the one step that turns
 * them into the proxy's settings (the API key resolved from its SecretRef).
 * Invariant: no message here quotes the API key, valid or not.
 */
import { z } from 'zod'
import { SandboxConfigError } from '../contracts/errors.js'
import { isSecretRef, resolveSecret, type SecretRef } from '../contracts/secret-ref.js'
import { parseOptions } from '../contracts/validate.js'

/**
 * The model API an upstream speaks:
 * - `anthropic-messages`: the Anthropic Messages API (`POST /v1/messages`), what Claude Code calls;
 * - `openai-responses`: the OpenAI Responses API (`POST /v1/responses`), what Codex calls;
 * - `openai-chat`: OpenAI-compatible chat completions (`POST /v1/chat/completions`), what OpenCode calls.
 */
export type ModelWire = 'anthropic-messages' | 'openai-responses' | 'openai-chat'

/** The wires {@link ModelWire} names, in a fixed order. */
const MODEL_WIRES = ['anthropic-messages', 'openai-responses', 'openai-chat'] as const satisfies readonly ModelWire[]

/** The real model API behind the proxy. */
export interface ModelUpstream {
  /** The API it speaks. */
  wire: ModelWire
  /**
   * The base URL requests go to: a request for `<proxy url><path>` is sent to
   * `<baseUrl><path>` (query kept), e.g. `https://api.anthropic.com` with the
   * agent appending `/v1/messages`. An http(s) URL without query, fragment or
   * user info; a trailing `/` is dropped.
   */
  baseUrl: string
  /**
   * The real API key: a plain string or a SecretRef from `createSecrets`
   * (resolved once, when the proxy starts). Printable ASCII without spaces.
   * Sent as `x-api-key` (anthropic-messages) or `Authorization: Bearer`
   * (the OpenAI wires); never returned to the agent.
   */
  apiKey: string | SecretRef
}

/** The price of one model, in US dollars per million tokens. */
export interface ModelPrice {
  /** Input tokens not read from or written to a prompt cache. */
  inputPerMTok: number
  /** Output tokens (reasoning tokens included, as the APIs count them). */
  outputPerMTok: number
  /** Input tokens read from a prompt cache. Default: `inputPerMTok`. */
  cacheReadPerMTok?: number
  /** Input tokens written to a prompt cache (Anthropic). Default: `inputPerMTok`. */
  cacheWritePerMTok?: number
}

/**
 * A per-run limit, checked before each request is forwarded: once the
 * totals have reached a limit, every later request is refused and nothing
 * more reaches the model.
 */
export interface ModelBudget {
  /** Most tokens for the run: input + output + cache reads + cache writes, over every model. */
  maxTokens?: number
  /**
   * Most spend for the run, in US dollars, computed from `prices`. Requires
   * `prices`; a request naming a model that has no price is refused
   * (`unpriced-model`) rather than priced by a guess.
   */
  maxCostUsd?: number
  /**
   * Prices by model name, as the request's `model` field or the response
   * names it. Also without `maxCostUsd`: then `usage().costUsd` is reported
   * and nothing is refused for it.
   */
  prices?: Record<string, ModelPrice>
}

/** Options of `createModelProxy`. */
export interface ModelProxyOptions {
  /** The real model API. */
  upstream: ModelUpstream
  /** A per-run limit. Default: none. */
  budget?: ModelBudget
  /** Address to listen on. Default `127.0.0.1`. Use the address the sandbox reaches the host at, not all interfaces. */
  host?: string
  /** Port. Default `0` (a free port chosen by the OS). */
  port?: number
}

/** What {@link parseModelProxyOptions} returns: the options checked, defaults applied, the key resolved. */
export interface ModelProxySettings {
  readonly wire: ModelWire
  /** The upstream base URL without a trailing `/`. */
  readonly baseUrl: string
  /** The resolved API key. Never put in a message. */
  readonly apiKey: string
  readonly budget: { readonly maxTokens?: number; readonly maxCostUsd?: number; readonly prices: Readonly<Record<string, ModelPrice>> }
  readonly host: string
  readonly port: number
}

/** What an API key may be: printable ASCII without spaces (it goes into an HTTP header as is). */
const API_KEY = /^[\x21-\x7e]+$/

const perMTok = z.number().nonnegative('expected a price of 0 or more US dollars per million tokens')

const priceSchema = z
  .object({ inputPerMTok: perMTok, outputPerMTok: perMTok, cacheReadPerMTok: perMTok.optional(), cacheWritePerMTok: perMTok.optional() })
  .strict()

const baseUrlSchema = z
  .url({ protocol: /^https?$/, message: 'expected an http(s) URL, e.g. https://api.anthropic.com' })
  // Zod runs this check also after the URL check failed: a value that is no URL at all is left to that one.
  .refine((value) => {
    if (!URL.canParse(value)) return true
    const url = new URL(value)
    return url.search === '' && url.hash === '' && url.username === '' && url.password === ''
  }, 'expected a base URL without query, fragment or user info (the key goes in apiKey)')

const optionsSchema = z
  .object({
    upstream: z
      .object({
        wire: z.enum(MODEL_WIRES, { message: `expected one of ${MODEL_WIRES.join(', ')}` }),
        baseUrl: baseUrlSchema,
        apiKey: z
          .custom<string | SecretRef>((value) => typeof value === 'string' || isSecretRef(value), { message: 'expected the API key as a string or a SecretRef from createSecrets()' })
          .refine((value) => typeof value !== 'string' || API_KEY.test(value), 'expected a non-empty key of printable characters without spaces'),
      })
      .strict(),
    budget: z
      .object({
        maxTokens: z.number().int().positive('expected a whole number of tokens above 0').optional(),
        maxCostUsd: z.number().positive('expected an amount of US dollars above 0').optional(),
        prices: z.record(z.string().min(1, 'expected a model name'), priceSchema).optional(),
      })
      .strict()
      .refine((budget) => budget.maxCostUsd === undefined || budget.prices !== undefined, {
        path: ['prices'],
        message: 'maxCostUsd needs a price for every model the agent may call, e.g. { "claude-sonnet-4-5": { inputPerMTok: 3, outputPerMTok: 15 } }',
      })
      .optional(),
    host: z.string().min(1).optional(),
    port: z.number().int().min(0).max(65535).optional(),
  })
  .strict()

/**
 * Check `createModelProxy`'s options, apply the defaults and resolve the key.
 *
 * @param options - See {@link ModelProxyOptions}.
 * @returns The settings the proxy runs with.
 * @throws SandboxConfigError naming the field (e.g. `createModelProxy.upstream.baseUrl`) for an invalid option, a
 *   SecretRef that resolves to an unusable key included.
 * @throws UnknownSecretError when `upstream.apiKey` is a reference not made by `createSecrets`.
 */
export function parseModelProxyOptions(options: ModelProxyOptions): ModelProxySettings {
  const { upstream, budget = {}, host = '127.0.0.1', port = 0 } = parseOptions(optionsSchema, options, 'createModelProxy')
  const apiKey = typeof upstream.apiKey === 'string' ? upstream.apiKey : resolveSecret(upstream.apiKey)
  if (!API_KEY.test(apiKey)) {
    throw new SandboxConfigError('createModelProxy.upstream.apiKey', `Invalid option createModelProxy.upstream.apiKey: the secret ${upstream.apiKey.toString()} is empty or holds spaces or control characters; an API key is printable characters without spaces.`)
  }
  const { maxTokens, maxCostUsd, prices = {} } = budget
  return {
    wire: upstream.wire,
    baseUrl: upstream.baseUrl.replace(/\/+$/, ''),
    apiKey,
    budget: { ...(maxTokens === undefined ? {} : { maxTokens }), ...(maxCostUsd === undefined ? {} : { maxCostUsd }), prices },
    host,
    port,
  }
}
