/**
 * createModelProxy's options at the boundary: each bad option is a
 * SandboxConfigError naming its field, whose message never quotes the key;
 * an address that cannot be bound is a ModelProxyError `listen-failed`.
 */
import { describe, expect, it } from 'vitest'
import { createSecrets, SandboxConfigError } from '../../src/index.js'
import { createModelProxy, ModelProxyError, type ModelProxyOptions } from '../../src/internal.js'

const upstream = { wire: 'openai-chat', baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-test-key' } as const

async function configError(options: unknown): Promise<SandboxConfigError> {
  const error: unknown = await createModelProxy(options as ModelProxyOptions).then(
    async (proxy) => {
      await proxy.close()
      throw new Error('expected a SandboxConfigError')
    },
    (thrown: unknown) => thrown,
  )
  expect(SandboxConfigError.isInstance(error)).toBe(true)
  return error as SandboxConfigError
}

describe('createModelProxy options', () => {
  it.each([
    ['createModelProxy.upstream', {}],
    ['createModelProxy.upstream.wire', { upstream: { ...upstream, wire: 'gemini' } }],
    ['createModelProxy.upstream.baseUrl', { upstream: { ...upstream, baseUrl: 'api.openai.com' } }],
    ['createModelProxy.upstream.baseUrl', { upstream: { ...upstream, baseUrl: 'ftp://api.openai.com' } }],
    ['createModelProxy.upstream.baseUrl', { upstream: { ...upstream, baseUrl: 'https://api.openai.com/v1?key=x' } }],
    ['createModelProxy.upstream.baseUrl', { upstream: { ...upstream, baseUrl: 'https://user:pass@api.openai.com' } }],
    ['createModelProxy.upstream.apiKey', { upstream: { ...upstream, apiKey: '' } }],
    ['createModelProxy.upstream.apiKey', { upstream: { ...upstream, apiKey: 42 } }],
    ['createModelProxy.budget.maxTokens', { upstream, budget: { maxTokens: 0 } }],
    ['createModelProxy.budget.maxTokens', { upstream, budget: { maxTokens: 1.5 } }],
    ['createModelProxy.budget.maxCostUsd', { upstream, budget: { maxCostUsd: -1, prices: {} } }],
    ['createModelProxy.budget.prices', { upstream, budget: { maxCostUsd: 5 } }],
    ['createModelProxy.budget.prices.gpt-x.outputPerMTok', { upstream, budget: { prices: { 'gpt-x': { inputPerMTok: 1 } } } }],
    ['createModelProxy.budget.prices.gpt-x.cacheReadPerMTok', { upstream, budget: { prices: { 'gpt-x': { inputPerMTok: 1, outputPerMTok: 2, cacheReadPerMTok: -0.1 } } } }],
    ['createModelProxy.port', { upstream, port: 70000 }],
    ['createModelProxy.host', { upstream, host: '' }],
  ])('names %s', async (field, options) => {
    expect((await configError(options)).field).toBe(field)
  })

  it('says where a misplaced option goes', async () => {
    const error = await configError({ upstream, maxTokens: 10 })
    expect(error.field).toBe('createModelProxy.maxTokens')
    expect(error.message).toContain('Did you mean createModelProxy.budget.maxTokens?')
  })

  it('never quotes the key, a bad one included, nor a SecretRef that resolves to an unusable key', async () => {
    const bad = await configError({ upstream: { ...upstream, apiKey: 'sk-with a-space' } })
    expect(bad.message).not.toContain('sk-with')
    const secrets = createSecrets({ EMPTY_KEY: '', SPACED_KEY: 'sk-secret value' })
    for (const apiKey of [secrets.EMPTY_KEY, secrets.SPACED_KEY]) {
      const error = await configError({ upstream: { ...upstream, apiKey } })
      expect(error.field).toBe('createModelProxy.upstream.apiKey')
      expect(error.message).toContain(`[secret ${apiKey.name}]`)
      expect(error.message).not.toContain('sk-secret')
    }
  })

  it('throws ModelProxyError listen-failed for an address of no interface here', async () => {
    const error: unknown = await createModelProxy({ upstream, host: '203.0.113.7' }).catch((thrown: unknown) => thrown)
    expect(ModelProxyError.isInstance(error)).toBe(true)
    expect((error as ModelProxyError).reason).toBe('listen-failed')
    expect((error as ModelProxyError).message).toContain('203.0.113.7:0')
  })
})
