/**
 * The usage rules of each wire on the payload shapes of the providers' docs,
 * including what aimock does not emit (prompt-cache counts, a cumulative
 * `message_delta` that repeats the input count, `response.incomplete`), and
 * the account that adds readings up: each response counted once, priced by
 * the response's model or else the request's, cache tokens at the input
 * price unless priced apart.
 */
import { describe, expect, it } from 'vitest'
import { createUsageMeter } from '../../src/credentials/usage-meter.js'
import { usageFromBody, usageFromEvent } from '../../src/credentials/wire-usage.js'

const json = (value: unknown) => JSON.stringify(value)

describe('anthropic-messages', () => {
  it('reads message_start (input and cache counts) and the cumulative counts of message_delta', () => {
    const start = { type: 'message_start', message: { model: 'claude-x', usage: { input_tokens: 25, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 1 } } }
    expect(usageFromEvent('anthropic-messages', json(start))).toEqual({ model: 'claude-x', counts: { inputTokens: 25, outputTokens: 1, cacheReadTokens: 2000, cacheWriteTokens: 100 } })
    expect(usageFromEvent('anthropic-messages', json({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 15 } }))).toEqual({ model: undefined, counts: { outputTokens: 15 } })
    expect(usageFromEvent('anthropic-messages', json({ type: 'content_block_delta', delta: { type: 'text_delta', text: 'hi' } }))).toBeUndefined()
    expect(usageFromEvent('anthropic-messages', json({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }))).toBeUndefined()
  })

  it('reads a whole message body', () => {
    const body = { type: 'message', model: 'claude-x', usage: { input_tokens: 12, output_tokens: 6, cache_read_input_tokens: 0 } }
    expect(usageFromBody('anthropic-messages', json(body))).toEqual({ model: 'claude-x', counts: { inputTokens: 12, outputTokens: 6, cacheReadTokens: 0 } })
    expect(usageFromBody('anthropic-messages', json({ type: 'error', error: { type: 'not_found_error', message: 'no' } }))).toBeUndefined()
  })
})

describe('openai-responses', () => {
  it('reads the usage of the terminal event, cached input apart, and only there', () => {
    const usage = { input_tokens: 300, input_tokens_details: { cached_tokens: 200 }, output_tokens: 50, output_tokens_details: { reasoning_tokens: 30 }, total_tokens: 350 }
    const counts = { inputTokens: 100, outputTokens: 50, cacheReadTokens: 200, cacheWriteTokens: 0 }
    for (const type of ['response.completed', 'response.incomplete', 'response.failed']) {
      expect(usageFromEvent('openai-responses', json({ type, response: { model: 'gpt-x', usage } }))).toEqual({ model: 'gpt-x', counts })
    }
    expect(usageFromEvent('openai-responses', json({ type: 'response.created', response: { model: 'gpt-x', usage: null } }))).toBeUndefined()
    expect(usageFromEvent('openai-responses', json({ type: 'response.output_text.delta', delta: 'hi' }))).toBeUndefined()
    expect(usageFromBody('openai-responses', json({ object: 'response', model: 'gpt-x', usage }))).toEqual({ model: 'gpt-x', counts })
  })
})

describe('openai-chat', () => {
  it('reads the chunk with usage, cached prompt tokens apart, and skips the rest and [DONE]', () => {
    const usage = { prompt_tokens: 40, prompt_tokens_details: { cached_tokens: 32 }, completion_tokens: 9, total_tokens: 49 }
    expect(usageFromEvent('openai-chat', json({ object: 'chat.completion.chunk', model: 'gpt-x', choices: [], usage }))).toEqual({ model: 'gpt-x', counts: { inputTokens: 8, outputTokens: 9, cacheReadTokens: 32, cacheWriteTokens: 0 } })
    expect(usageFromEvent('openai-chat', json({ object: 'chat.completion.chunk', model: 'gpt-x', choices: [{ delta: { content: 'hi' } }], usage: null }))).toBeUndefined()
    expect(usageFromEvent('openai-chat', '[DONE]')).toBeUndefined()
    expect(usageFromBody('openai-chat', json({ object: 'chat.completion', model: 'gpt-x', usage: { prompt_tokens: 5, completion_tokens: 2 } }))?.counts).toEqual({ inputTokens: 5, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0 })
  })

  it('finds nothing in what is not a usage object, and no count in what is not a whole number', () => {
    for (const text of ['', 'not json', 'null', '[1,2]', json({ usage: 'many' })]) expect(usageFromBody('openai-chat', text)).toBeUndefined()
    expect(usageFromBody('openai-chat', json({ usage: { prompt_tokens: -1, completion_tokens: 1.5 } }))?.counts).toEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 })
  })
})

describe('createUsageMeter', () => {
  it('counts a response once however many cumulative readings it sends, and counts each response', () => {
    const meter = createUsageMeter({})
    const first = meter.response('claude-x')
    first({ model: 'claude-x', counts: { inputTokens: 25, outputTokens: 1, cacheReadTokens: 2000, cacheWriteTokens: 100 } })
    first({ model: undefined, counts: { outputTokens: 8 } })
    first({ model: undefined, counts: { outputTokens: 15 } })
    meter.response('claude-x')({ model: 'claude-x', counts: { inputTokens: 5, outputTokens: 5 } })
    expect(meter.totals()).toEqual({
      inputTokens: 30,
      outputTokens: 20,
      cacheReadTokens: 2000,
      cacheWriteTokens: 100,
      totalTokens: 2150,
      requests: 2,
      byModel: { 'claude-x': { inputTokens: 30, outputTokens: 20, cacheReadTokens: 2000, cacheWriteTokens: 100, requests: 2 } },
    })
  })

  it("prices by the response's model, else the request's, cache tokens at the input price unless priced apart", () => {
    const meter = createUsageMeter({ 'claude-alias': { inputPerMTok: 3, outputPerMTok: 15, cacheReadPerMTok: 0.3 }, 'gpt-x': { inputPerMTok: 2, outputPerMTok: 8 } })
    // The request named an alias; the answer names the dated model, which has no price of its own.
    meter.response('claude-alias')({ model: 'claude-dated', counts: { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 10_000, cacheWriteTokens: 1000 } })
    meter.response('gpt-x')({ model: 'gpt-x', counts: { inputTokens: 500, outputTokens: 50, cacheReadTokens: 500, cacheWriteTokens: 0 } })
    const totals = meter.totals()
    const claude = (1000 * 3 + 100 * 15 + 10_000 * 0.3 + 1000 * 3) / 1e6
    const gpt = (500 * 2 + 50 * 8 + 500 * 2) / 1e6
    expect(totals.byModel['claude-dated']?.costUsd).toBeCloseTo(claude, 12)
    expect(totals.byModel['gpt-x']?.costUsd).toBeCloseTo(gpt, 12)
    expect(totals.costUsd).toBeCloseTo(claude + gpt, 12)
  })

  it('reports no cost without a price table, and a copy each time', () => {
    const meter = createUsageMeter({})
    meter.response(undefined)({ model: undefined, counts: { inputTokens: 1, outputTokens: 1 } })
    const totals = meter.totals()
    expect(totals).not.toHaveProperty('costUsd')
    expect(Object.keys(totals.byModel)).toEqual(['unknown'])
    totals.byModel.unknown!.inputTokens = 99
    expect(meter.totals().byModel.unknown?.inputTokens).toBe(1)
  })
})
