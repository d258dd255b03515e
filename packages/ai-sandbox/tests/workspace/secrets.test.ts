import { inspect } from 'node:util'
import { describe, expect, it } from 'vitest'
import { bearer, createSecrets, defineWorkspace, isSecretRef, redactSecrets, resolveSecret, SandboxConfigError, UnknownSecretError } from '../../src/index.js'

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

  it('refuses a name that is not an environment variable name where it is declared, with a fix (issue 30)', () => {
    let thrown: unknown
    try {
      createSecrets({ 'bad-name': 'v4lue-xyz' })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(SandboxConfigError)
    expect(thrown).toMatchObject({ field: 'createSecrets.bad-name', message: expect.stringMatching(/environment variable names.*e\.g\. "bad_name"/) })
    expect((thrown as Error).message).not.toContain('v4lue-xyz')
    expect(() => createSecrets({ '9LIVES': 'x' })).toThrow(/e\.g\. "_9LIVES"/)
  })

  it('names the rule when defineWorkspace gets a plain value under a bad name', () => {
    expect(() => defineWorkspace({ secrets: { 'bad-name': 'v' } })).toThrow(/workspace\.secrets\.bad-name: invalid key: secret names must be environment variable names/)
  })
})
