/**
 * How create and resume wait for a container to start, in Node without
 * workerd: the SDK gives up on a starting container after about 105 s of its
 * own retries (`Container is starting`), and the provider asks again until
 * its own `timeoutMs` has passed, then fails `unreachable`. `@cloudflare/sandbox`
 * imports `cloudflare:workers`, which only workerd has, so `getSandbox` is
 * replaced by a stub whose `exec` answers as the SDK does; the lab suites
 * (provider.test.ts) prove the same paths against real containers.
 */
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { SandboxOperationError } from '@tanstack/ai-sandbox'

vi.mock('@cloudflare/sandbox', () => ({ getSandbox: vi.fn(), Sandbox: class {} }))

const { getSandbox } = await import('@cloudflare/sandbox')
const { cloudflareSandbox } = await import('../src/index.js')

const binding = { idFromName: () => ({}), get: () => ({}) }
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

beforeEach(() => {
  execCalls = 0
  destroyCalls = 0
})

describe('cloudflareSandbox container start', () => {
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
