/**
 * cloudflareSandbox()'s options at the boundary, in Node without workerd:
 * defaults, a missing or wrong binding, and each bad option refused with a
 * SandboxConfigError naming the field and the fix. `@cloudflare/sandbox`
 * imports `cloudflare:workers`, which only workerd has, so it is replaced
 * here by a stub that records the getSandbox options.
 */
import { describe, expect, it, vi } from 'vitest'
import { SandboxConfigError } from '@tanstack/ai-sandbox'

vi.mock('@cloudflare/sandbox', () => ({ getSandbox: vi.fn(), Sandbox: class {} }))

const { getSandbox } = await import('@cloudflare/sandbox')
const { CLOUDFLARE_CAPABILITIES, cloudflareSandbox, DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS } = await import('../src/index.js')

const binding = { idFromName: () => ({}), get: () => ({}) }

function refusal(config: unknown): SandboxConfigError {
  try {
    cloudflareSandbox(config as never)
  } catch (error) {
    if (error instanceof SandboxConfigError) return error
    throw error
  }
  throw new Error('expected a SandboxConfigError')
}

describe('cloudflareSandbox config', () => {
  it('needs the Durable Object binding, and says how to add it', () => {
    for (const config of [undefined, {}, { binding: undefined }, { binding: { get: () => ({}) } }, { binding: 'Sandbox' }]) {
      const error = refusal(config)
      expect(error.field).toBe('cloudflareSandbox.binding')
      expect(error.message).toMatch(/env\.Sandbox/)
      expect(error.message).toMatch(/wrangler/)
    }
  })

  it('defaults: a provider named cloudflare, ports only with a preview hostname', () => {
    const provider = cloudflareSandbox({ binding })
    expect(provider.name).toBe('cloudflare')
    expect(provider.capabilities()).toEqual({ ...CLOUDFLARE_CAPABILITIES, ports: false })
    expect(provider.capabilities().writableStdin).toBe(false)
    expect(provider.capabilities().killableProcesses).toBe(true)
    expect(cloudflareSandbox({ binding, previewHostname: 'Sandbox.Example.com' }).capabilities()).toEqual(CLOUDFLARE_CAPABILITIES)
    expect(cloudflareSandbox({ binding, previewHostname: 'localhost:8787' }).capabilities().ports).toBe(true)
    expect(DEFAULT_MAX_EXEC_OUTPUT_BYTES * 4 / 3, 'the default exec bound fits Workers RPC base64-encoded').toBeLessThan(32 * 1024 * 1024)
    expect(DEFAULT_TIMEOUT_MS).toBeLessThan(150_000)
  })

  it('refuses bad options naming the field', () => {
    expect(refusal({ binding, workdir: 'relative' }).field).toBe('cloudflareSandbox.workdir')
    expect(refusal({ binding, workdir: '/a/../etc' }).field).toBe('cloudflareSandbox.workdir')
    expect(refusal({ binding, workdir: '/' }).field).toBe('cloudflareSandbox.workdir')
    expect(refusal({ binding, workdir: '/tmp' }).field).toBe('cloudflareSandbox.workdir')
    expect(refusal({ binding, previewHostname: 'https://x.example.com/' }).field).toBe('cloudflareSandbox.previewHostname')
    expect(refusal({ binding, previewHostname: 'my-app.workers.dev' }).message).toMatch(/custom domain/)
    expect(refusal({ binding, sleepAfter: '5s' }).message).toMatch(/at least 10 seconds/)
    expect(refusal({ binding, sleepAfter: '10 minutes' }).field).toBe('cloudflareSandbox.sleepAfter')
    expect(refusal({ binding, keepAlive: 'yes' }).field).toBe('cloudflareSandbox.keepAlive')
    expect(refusal({ binding, env: { 'BAD-NAME': 'x' } }).field).toBe('cloudflareSandbox.env.BAD-NAME')
    expect(refusal({ binding, killGraceMs: -1 }).field).toBe('cloudflareSandbox.killGraceMs')
    expect(refusal({ binding, maxExecOutputBytes: 64 * 1024 * 1024 }).message).toMatch(/32 MiB/)
    expect(refusal({ binding, timeoutMs: 0 }).field).toBe('cloudflareSandbox.timeoutMs')
    expect(refusal({ binding, maxReadBytes: 65 * 1024 * 1024 }).message).toMatch(/at most 64 MiB: the Worker holds the whole file/)
    expect(refusal({ binding, image: 'x' }).message).toMatch(/image/)
    expect(cloudflareSandbox({ binding, workdir: '/home/user/ws/', sleepAfter: '30m', keepAlive: true }).name).toBe('cloudflare')
  })

  it('the fingerprint names the workspace, never the env', () => {
    const a = cloudflareSandbox({ binding, env: { TOKEN: 'secret-one' } })
    const b = cloudflareSandbox({ binding, env: { TOKEN: 'secret-two' } })
    expect(a.fingerprint).toBe(b.fingerprint)
    expect(a.fingerprint).not.toContain('secret')
  })

  it('resume and destroy of an id that cannot be a sandbox: null and a no-op, without a call', async () => {
    const provider = cloudflareSandbox({ binding })
    expect(await provider.resume({ id: 'www' })).toBeNull()
    expect(await provider.resume({ id: '-bad-' })).toBeNull()
    await expect(provider.destroy({ id: 'x'.repeat(64) })).resolves.toBeUndefined()
    await expect(provider.resume({ id: '' })).rejects.toMatchObject({ field: 'resume.id' })
  })

  it('keepAlive wins over sleepAfter: the idle time is not sent to the SDK', async () => {
    const stub = vi.mocked(getSandbox)
    stub.mockClear()
    // The stub's sandbox has no methods, so the resume fails after asking for it; what it asked with is the point.
    await cloudflareSandbox({ binding, sleepAfter: '30m', keepAlive: true }).resume({ id: 'tsb-keepalive' }).catch(() => undefined)
    expect(stub).toHaveBeenCalled()
    for (const [, , options] of stub.mock.calls) {
      expect(options).toMatchObject({ keepAlive: true })
      expect(options).not.toHaveProperty('sleepAfter')
    }
    stub.mockClear()
    await cloudflareSandbox({ binding, sleepAfter: 90 }).resume({ id: 'tsb-sleepy' }).catch(() => undefined)
    expect(stub.mock.calls[0]?.[2]).toMatchObject({ keepAlive: false, sleepAfter: 90 })
  })
})
