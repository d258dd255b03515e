/**
 * cloudflareSandbox()'s options at the boundary, in Node without workerd:
 * defaults, a missing or wrong binding, and each bad option refused with a
 * SandboxConfigError naming the field and the fix. `@cloudflare/sandbox`
 * imports `cloudflare:workers`, which only workerd has, so it is replaced
 * here by a stub that records the getSandbox options.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { SandboxConfigError, SandboxOperationError } from '@tanstack/ai-sandbox'

vi.mock('@cloudflare/sandbox', () => ({ getSandbox: vi.fn(), Sandbox: class {} }))

const { getSandbox } = await import('@cloudflare/sandbox')
const { CLOUDFLARE_CAPABILITIES, cloudflareSandbox, DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS } = await import('../src/index.js')
const { createCloudflareSandboxAgent } = await import('../src/agent/create-agent.js')

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

/*
 * How create and resume wait for a container to start: the SDK gives up on a
 * starting container after about 105 s of its own retries (`Container is
 * starting`), and the provider asks again until its own `timeoutMs` has
 * passed, then fails `unreachable`. The stub's `exec` answers as the SDK
 * does; the lab suites prove the same paths against real containers.
 */
/** What the SDK throws once its retries of a starting container ran out (its message, across Workers RPC). */
const STARTING = 'SandboxError: Container is starting. Please retry in a moment.'

let execCalls = 0
let destroyCalls = 0
/** Make the stub's `exec` fail with `STARTING` `failures` times, then answer `answer`. */
function sdkAnswering(failures: number, answer: string): void {
  vi.mocked(getSandbox).mockImplementation(
    () =>
      ({
        exec: async () => {
          execCalls += 1
          if (execCalls <= failures) throw new Error(STARTING)
          return { exitCode: 0, stdout: `${answer}\n`, stderr: '' }
        },
        destroy: async () => {
          destroyCalls += 1
        },
      }) as never,
  )
}

describe('cloudflareSandbox container start', () => {
  beforeEach(() => {
    execCalls = 0
    destroyCalls = 0
  })
  // The other cases expect the bare stub (a sandbox with no methods).
  afterEach(() => vi.mocked(getSandbox).mockReset())

  it('asks again while timeoutMs has time left when the SDK gave up on a starting container', async () => {
    sdkAnswering(2, 'TSB-NONE')
    const provider = cloudflareSandbox({ binding, timeoutMs: 10_000 })
    // resume of an id whose container turns out empty: null, after the third ask, and the container is stopped again.
    expect(await provider.resume({ id: 'tsb-0123456789abcdef01234567' })).toBeNull()
    expect(execCalls).toBe(3)
    expect(destroyCalls).toBe(1)
  })

  it('fails unreachable once timeoutMs has passed, naming the SDK answer and the fix', async () => {
    sdkAnswering(Number.POSITIVE_INFINITY, 'TSB-NONE')
    const provider = cloudflareSandbox({ binding, timeoutMs: 2_500 })
    const startedAt = Date.now()
    const error = await provider.create().catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect((error as SandboxOperationError).reason).toBe('unreachable')
    expect((error as Error).message).toMatch(/did not become ready \(SandboxError: Container is starting/)
    expect((error as Error).message).toMatch(/control server listens on port 3000/)
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_400)
    expect(execCalls).toBeGreaterThanOrEqual(2)
    // create leaves no container behind.
    expect(destroyCalls).toBe(1)
  })

  it('does not ask again after a failure that is not a start in progress', async () => {
    vi.mocked(getSandbox).mockImplementation(
      () =>
        ({
          exec: async () => {
            execCalls += 1
            throw new Error('SandboxError: Container failed to start due to a permanent error. Check your container configuration.')
          },
          destroy: async () => undefined,
        }) as never,
    )
    const error = await cloudflareSandbox({ binding, timeoutMs: 10_000 }).create().catch((caught: unknown) => caught)
    expect((error as SandboxOperationError).reason).toBe('create-failed')
    expect(execCalls).toBe(1)
  })
})

describe('createCloudflareSandboxAgent config', () => {
  const valid = { mode: 'do-drives' as const, adapter: () => ({}) as never, token: () => 'token' }
  const refused = (config: unknown): SandboxConfigError => {
    try {
      createCloudflareSandboxAgent(config as never)
    } catch (error) {
      if (error instanceof SandboxConfigError) return error
      throw error
    }
    throw new Error('expected a SandboxConfigError')
  }

  it('returns the two Durable Object classes and the Worker handler', () => {
    const agent = createCloudflareSandboxAgent(valid)
    expect(typeof agent.Coordinator).toBe('function')
    expect(typeof agent.Sandbox).toBe('function')
    expect(typeof agent.worker.fetch).toBe('function')
  })

  it('refuses each bad option naming the field and the fix', () => {
    expect(refused({ ...valid, mode: 'edge' })).toMatchObject({ field: 'createCloudflareSandboxAgent.mode', message: expect.stringMatching(/expected 'do-drives' .* or 'colocated'/) })
    expect(refused({ ...valid, runner: () => ({ command: 'node runner.mjs' }) })).toMatchObject({ field: 'createCloudflareSandboxAgent.runner', message: expect.stringMatching(/do-drives takes no runner/) })
    expect(refused({ ...valid, token: 'secret' })).toMatchObject({ field: 'createCloudflareSandboxAgent.token', message: expect.stringMatching(/env\.RUN_TOKEN/) })
    expect(refused({ ...valid, basePath: 'runs/' }).field).toBe('createCloudflareSandboxAgent.basePath')
    expect(refused({ ...valid, heartbeatMs: 10 }).field).toBe('createCloudflareSandboxAgent.heartbeatMs')
    expect(refused({ ...valid, publicUrl: 'https://agent.example' })).toMatchObject({ field: 'createCloudflareSandboxAgent.publicUrl', message: expect.stringMatching(/env\.PUBLIC_URL/) })
    expect(refused({ ...valid, extra: true }).field).toMatch(/^createCloudflareSandboxAgent/)
  })

  it('colocated mode takes a runner and refuses the options that belong in the container', () => {
    const colocated = { mode: 'colocated' as const, runner: () => ({ command: 'node /app/runner.mjs' }), token: () => 'token' }
    expect(typeof createCloudflareSandboxAgent(colocated).worker.fetch).toBe('function')
    expect(refused({ ...colocated, runner: undefined })).toMatchObject({ field: 'createCloudflareSandboxAgent.runner', message: expect.stringMatching(/node \/app\/runner\.mjs/) })
    expect(refused({ ...colocated, adapter: () => ({}) })).toMatchObject({ field: 'createCloudflareSandboxAgent.adapter', message: expect.stringMatching(/runInContainerHarness\(\{ adapter \}\)/) })
    expect(refused({ ...colocated, sandbox: () => ({}) })).toMatchObject({ field: 'createCloudflareSandboxAgent.sandbox', message: expect.stringMatching(/runInContainerHarness\(\{ sandbox \}\)/) })
  })

  it('answers 401 without the bearer and names a missing Coordinator binding', async () => {
    const agent = createCloudflareSandboxAgent(valid)
    expect((await agent.worker.fetch(new Request('https://w/runs', { method: 'POST', body: '{}' }), {})).status).toBe(401)
    expect((await agent.worker.fetch(new Request('https://w/other'), {})).status).toBe(404)
    const error = await agent.worker.fetch(new Request('https://w/runs', { method: 'POST', headers: { authorization: 'Bearer token' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }) }), {}).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ field: 'createCloudflareSandboxAgent.bindings.coordinator', message: expect.stringMatching(/env\.Coordinator is not a Durable Object namespace/) })
  })
})
