import { inspect } from 'node:util'
import { describe, expect, it } from 'vitest'
import { bearer, createSecrets, isSecretRef, redactSecrets, resolveSecret, UnknownSecretError } from '../../src/index.js'

describe('secrets', () => {
  const secrets = createSecrets({ GH: 'ghp_abcdef123456', EMPTY: '' })

  it('keeps values out of JSON, string conversion, inspection and enumeration', () => {
    const everywhere = [JSON.stringify(secrets), String(secrets.GH), `${secrets.GH}`, inspect(secrets, { depth: 5, showHidden: true }), Object.keys(secrets.GH).join(), JSON.stringify(Object.entries(secrets.GH))]
    for (const text of everywhere) expect(text).not.toContain('ghp_abcdef123456')
    expect(JSON.parse(JSON.stringify(secrets))).toEqual({ GH: { $secret: 'GH' }, EMPTY: { $secret: 'EMPTY' } })
  })

  it('resolves raw and bearer references', () => {
    expect(resolveSecret(secrets.GH)).toBe('ghp_abcdef123456')
    expect(resolveSecret(bearer(secrets.GH))).toBe('Bearer ghp_abcdef123456')
    expect(resolveSecret(secrets.EMPTY)).toBe('')
    expect(isSecretRef(bearer(secrets.GH))).toBe(true)
    expect(isSecretRef({ name: 'GH' })).toBe(false)
  })

  it('refuses forged references with UnknownSecretError', () => {
    const forged = { name: 'GH', format: 'raw' } as never
    expect(() => resolveSecret(forged)).toThrow(UnknownSecretError)
    expect(() => bearer(forged)).toThrow(UnknownSecretError)
  })

  it('redacts values in text', () => {
    expect(redactSecrets('token=ghp_abcdef123456!', Object.values(secrets))).toBe('token=[secret GH]!')
  })

  it('refuses non-string values', () => {
    expect(() => createSecrets({ X: 1 as never })).toThrow(/must be a string/)
  })
})
