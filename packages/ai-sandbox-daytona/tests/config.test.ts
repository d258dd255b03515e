/**
 * daytonaSandbox()'s options at the boundary, without any server: defaults,
 * the API key from DAYTONA_API_KEY, and each bad option refused with a
 * SandboxConfigError naming the field and the fix.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SandboxConfigError } from '@tanstack/ai-sandbox'
import { DAYTONA_CAPABILITIES, daytonaSandbox } from '../src/index.js'

afterEach(() => vi.unstubAllEnvs())

function refusal(config: unknown): SandboxConfigError {
  try {
    daytonaSandbox(config as never)
  } catch (error) {
    if (error instanceof SandboxConfigError) return error
    throw error
  }
  throw new Error('expected a SandboxConfigError')
}

describe('daytonaSandbox config', () => {
  it('needs an API key: the option or DAYTONA_API_KEY', () => {
    vi.stubEnv('DAYTONA_API_KEY', '')
    const error = refusal({})
    expect(error.field).toBe('daytonaSandbox.apiKey')
    expect(error.message).toMatch(/DAYTONA_API_KEY/)
    vi.stubEnv('DAYTONA_API_KEY', 'from-env')
    expect(daytonaSandbox({ apiUrl: 'http://127.0.0.1:9' }).name).toBe('daytona')
  })

  it('refuses bad options naming the field', () => {
    expect(refusal({ apiKey: 'k', apiUrl: 'not a url' }).field).toBe('daytonaSandbox.apiUrl')
    expect(refusal({ apiKey: 'k', autoStopInterval: -1 }).field).toBe('daytonaSandbox.autoStopInterval')
    expect(refusal({ apiKey: 'k', autoStopInterval: 1.5 }).field).toBe('daytonaSandbox.autoStopInterval')
    expect(refusal({ apiKey: 'k', workdir: 'relative/dir' }).field).toBe('daytonaSandbox.workdir')
    expect(refusal({ apiKey: 'k', workdir: '/home/../etc' }).field).toBe('daytonaSandbox.workdir')
    expect(refusal({ apiKey: 'k', networkAllowList: ['10.0.0.0'] }).field).toBe('daytonaSandbox.networkAllowList.0')
    expect(refusal({ apiKey: 'k', env: { 'BAD-NAME': 'x' } }).field).toBe('daytonaSandbox.env.BAD-NAME')
    expect(refusal({ apiKey: 'k', image: 'x' }).message).toMatch(/image/)
    expect(refusal({ apiKey: 'k', workdir: '/' }).field, 'the provider would make / the sandbox user\'s').toBe('daytonaSandbox.workdir')
    expect(refusal({ apiKey: 'k', workdir: '/usr' }).field).toBe('daytonaSandbox.workdir')
    expect(refusal({ apiKey: 'k', apiUrl: 'ftp://x/api' }).field).toBe('daytonaSandbox.apiUrl')
    expect(refusal({ apiKey: '   ' }).field).toBe('daytonaSandbox.apiKey')
    expect(refusal({ apiKey: 'k', labels: { 'tanstack.sandbox.journal-secret': 'x' } }).field).toBe('daytonaSandbox.labels')
    expect(daytonaSandbox({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9', workdir: '/home/daytona/ws/' }).name, 'a trailing slash is fine').toBe('daytona')
  })

  it('advertises its capabilities; ports are off with networkBlockAll', () => {
    const open = daytonaSandbox({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9' })
    expect(open.capabilities()).toEqual(DAYTONA_CAPABILITIES)
    expect(open.capabilities().writableStdin).toBe(false)
    expect(daytonaSandbox({ apiKey: 'k', apiUrl: 'http://127.0.0.1:9', networkBlockAll: true }).capabilities().ports).toBe(false)
  })

  it('the fingerprint names where sandboxes live, never the key', () => {
    const a = daytonaSandbox({ apiKey: 'secret-one', apiUrl: 'http://127.0.0.1:9', snapshot: 's' })
    const b = daytonaSandbox({ apiKey: 'secret-two', apiUrl: 'http://127.0.0.1:9', snapshot: 's' })
    expect(a.fingerprint).toBe(b.fingerprint)
    expect(a.fingerprint).not.toContain('secret')
  })
})
