/**
 * The secret redactor of a harness run: workspace secrets from the run's
 * projection, forwarded host credentials and secret-valued env entries become
 * `[secret NAME]`, longest first; plain env strings and short values do not.
 */
import { describe, expect, it } from 'vitest'
import type { CapabilityContext } from '@tanstack/ai'
import { createHarnessSecretRedactor, createSecrets, provideProjection } from '../../src/index.js'

/** The middleware context as chat() hands it to adapters, with a projection whose workspace has `secretEnv`. */
function contextWithSecrets(secretEnv: Record<string, string>): CapabilityContext {
  const ctx = { capabilities: { markProvided: () => undefined } } as unknown as CapabilityContext
  provideProjection(ctx, { resolveSecretEnv: () => secretEnv } as never)
  return ctx
}

describe('createHarnessSecretRedactor', () => {
  it('redacts workspace secrets, forwarded host values and secret references in env under their variable names', () => {
    const refs = createSecrets({ RAW: 'ghp_reference_value' })
    const redact = createHarnessSecretRedactor({
      capabilities: contextWithSecrets({ GITHUB_TOKEN: 'ghp_workspace_value' }),
      forwardedHostEnv: ['OPENAI_API_KEY', 'UNSET_KEY'],
      env: { GH_TOKEN: refs.RAW, HOME: '/home/agent' },
      hostEnv: { OPENAI_API_KEY: 'sk-host-value', OTHER: 'not-forwarded' },
    })
    expect(redact('a ghp_workspace_value b sk-host-value c ghp_reference_value d /home/agent not-forwarded')).toBe(
      'a [secret GITHUB_TOKEN] b [secret OPENAI_API_KEY] c [secret GH_TOKEN] d /home/agent not-forwarded',
    )
  })

  it('replaces a longer value before a value inside it, and leaves values under 4 characters alone', () => {
    const redact = createHarnessSecretRedactor({ forwardedHostEnv: ['SHORT', 'INNER', 'OUTER'], hostEnv: { SHORT: 'abc', INNER: 'token', OUTER: 'my-token-value' } })
    expect(redact('abc my-token-value token')).toBe('abc [secret OUTER] [secret INNER]')
  })

  it('reads process.env by default and works without capabilities', () => {
    const name = 'TANSTACK_REDACTOR_TEST_KEY'
    process.env[name] = 'value-from-process-env'
    try {
      const redact = createHarnessSecretRedactor({ forwardedHostEnv: [name] })
      expect(redact('x value-from-process-env')).toBe(`x [secret ${name}]`)
    } finally {
      delete process.env[name]
    }
    expect(createHarnessSecretRedactor({})('nothing to hide')).toBe('nothing to hide')
    expect(createHarnessSecretRedactor({ capabilities: { capabilities: { markProvided: () => undefined } } as unknown as CapabilityContext })('no projection')).toBe('no projection')
  })
})
