/**
 * Budgets at the model proxy, in front of real aimock: a token budget lets
 * the call that crosses it through and refuses the next, in the wire's error
 * format, with nothing forwarded from then on and the refusal kept as state;
 * a cost budget prices each model from the table, and refuses a model without
 * a price rather than guess one.
 */
import { describe, expect, it } from 'vitest'
import type { ModelProxy, ModelProxyOptions, ModelWire } from '../../src/internal.js'
import { useAimockProxies } from './aimock.js'
import { callModel, keyHeader, MODEL, WIRES } from './wire-calls.js'

const env = useAimockProxies()

const proxyWith = (wire: ModelWire, budget: ModelProxyOptions['budget']): Promise<ModelProxy> => env.proxy({ wire }, budget)

/** One call through `proxy` with its token; the body is read whole, so its usage is counted. */
async function call(proxy: ModelProxy, wire: ModelWire, stream: boolean, model?: string): Promise<{ status: number; body: string }> {
  const response = await callModel(proxy.url, wire, { stream, headers: keyHeader(wire, proxy.token), ...(model ? { model } : {}) })
  return { status: response.status, body: await response.text() }
}

describe.each(WIRES)('%s', (wire) => {
  it('a token budget passes the call that crosses it, then refuses every call without forwarding it', async () => {
    // Each answer is 18 tokens: 18 < 30, then 36 >= 30.
    const proxy = await proxyWith(wire, { maxTokens: 30 })
    const before = env.aimock.requests().length
    expect((await call(proxy, wire, true)).status).toBe(200)
    expect((await call(proxy, wire, false)).status).toBe(200)
    expect(proxy.usage().budgetExceeded).toBeUndefined()

    const refused = await call(proxy, wire, true)
    expect(refused.status).toBe(400)
    const body = JSON.parse(refused.body) as Record<string, unknown>
    const message = 'Token budget exceeded: this run has used 36 tokens of its 30-token budget (budget.maxTokens), so the model proxy refused this request and sent nothing to the model.'
    if (wire === 'anthropic-messages') expect(body).toEqual({ type: 'error', error: { type: 'budget_exceeded', message } })
    else expect(body).toEqual({ error: { message, type: 'budget_exceeded', param: null, code: 'budget_exceeded' } })
    expect((await call(proxy, wire, false)).status).toBe(400)

    expect(env.aimock.requests().length - before).toBe(2)
    expect(proxy.usage()).toMatchObject({ totalTokens: 36, requests: 2, budgetExceeded: { figure: 'tokens', used: 36, limit: 30, message } })
  })
})

it('a cost budget counts each model at its price and refuses once spent', async () => {
  // 11 input tokens at $2/MTok and 7 output tokens at $10/MTok: $0.000092 a call.
  const prices = { 'gpt-chat-test': { inputPerMTok: 2, outputPerMTok: 10 } }
  const proxy = await proxyWith('openai-chat', { maxCostUsd: 0.0001, prices })
  const before = env.aimock.requests().length
  expect((await call(proxy, 'openai-chat', false)).status).toBe(200)
  expect(proxy.usage().costUsd).toBeCloseTo(0.000092, 12)
  expect((await call(proxy, 'openai-chat', true)).status).toBe(200)
  const refused = await call(proxy, 'openai-chat', false)
  expect(refused.status).toBe(400)
  expect(refused.body).toContain('Cost budget exceeded: this run has spent $0.000184 of its $0.0001 budget')
  expect(env.aimock.requests().length - before).toBe(2)
  const usage = proxy.usage()
  expect(usage.byModel[MODEL['openai-chat']]?.costUsd).toBeCloseTo(0.000184, 12)
  expect(usage.budgetExceeded).toMatchObject({ figure: 'costUsd', limit: 0.0001 })
  expect(usage.budgetExceeded?.used).toBeCloseTo(0.000184, 12)
})

it('a cost budget refuses a model with no price, forwarding nothing, and still serves the priced ones', async () => {
  const proxy = await proxyWith('anthropic-messages', { maxCostUsd: 1, prices: { 'claude-test': { inputPerMTok: 3, outputPerMTok: 15 } } })
  const before = env.aimock.requests().length
  const refused = await call(proxy, 'anthropic-messages', true, 'claude-unpriced')
  expect(refused.status).toBe(400)
  expect(JSON.parse(refused.body)).toEqual({
    type: 'error',
    error: {
      type: 'invalid_request_error',
      message: 'No price for model "claude-unpriced": a cost budget (budget.maxCostUsd) is set and the model proxy does not guess prices, so it refused this request and sent nothing to the model. Add the model to budget.prices (priced: claude-test).',
    },
  })
  expect(env.aimock.requests().length).toBe(before)
  expect(proxy.usage().budgetExceeded).toBeUndefined()
  expect((await call(proxy, 'anthropic-messages', true)).status).toBe(200)
  expect(proxy.usage().costUsd).toBeCloseTo((11 * 3 + 7 * 15) / 1e6, 12)
})

it('prices without a cost budget report the cost and refuse nothing', async () => {
  const proxy = await proxyWith('openai-responses', { prices: { 'gpt-test': { inputPerMTok: 1, outputPerMTok: 4 } } })
  expect((await call(proxy, 'openai-responses', true)).status).toBe(200)
  expect((await call(proxy, 'openai-responses', false, 'gpt-unpriced')).status).toBe(200)
  const usage = proxy.usage()
  expect(usage.byModel['gpt-test']?.costUsd).toBeCloseTo((11 * 1 + 7 * 4) / 1e6, 12)
  expect(usage.byModel['gpt-unpriced']).not.toHaveProperty('costUsd')
  // One model without a price: the run's cost is unknown, not a partial sum.
  expect(usage).not.toHaveProperty('costUsd')
})
