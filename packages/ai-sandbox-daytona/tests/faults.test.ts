// How daytonaSandbox fails, proved on the Daytona stand-in's failure switches
// through the public API (the real @daytona/sdk is the stand-in's only
// client): every failure is a typed core error whose reason and message name
// what happened and the fix (a missing or wrong API key, an unknown snapshot
// or target, a 429, an unreachable API, a sandbox deleted behind our back),
// no failed create leaves a sandbox, and a handle works again once the API
// answers. Skips naming the engine when it is not answering (fails under
// REQUIRE_DOCKER=1).
import { afterAll, expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError } from '@tanstack/ai-sandbox'
import type { SandboxHandle } from '@tanstack/ai-sandbox'
import { describeWithDocker } from '@testing/support/docker-engine'
import { daytonaSandbox } from '../src/index.js'
import { daytonaLab } from './helpers/standin.js'

const lab = await daytonaLab('faults')

/** What a promise rejected with (fails the test when it resolves). */
async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  return promise.then(
    () => expect.unreachable('expected a rejection'),
    (error: unknown) => error,
  )
}

/** What a function threw (fails the test when it returns). */
function thrownBy(run: () => unknown): any {
  try {
    run()
  } catch (error) {
    return error
  }
  return expect.unreachable('expected a throw')
}

/** Expect a SandboxOperationError of the daytona provider with `reason`, and return it. */
function expectOperationError(error: unknown, reason: string): SandboxOperationError {
  expect(SandboxOperationError.isInstance(error), String(error)).toBe(true)
  expect(error).toMatchObject({ reason, provider: 'daytona' })
  return error as SandboxOperationError
}

/** Expect a SandboxConfigError naming `field`, and return it. */
function expectConfigError(error: unknown, field: string): SandboxConfigError {
  expect(SandboxConfigError.isInstance(error), String(error)).toBe(true)
  expect(error).toMatchObject({ reason: 'invalid-option', field })
  return error as SandboxConfigError
}

describeWithDocker('daytona provider faults on the stand-in', lab.reason, () => {
  lab.cleanupAfter()

  /** The one sandbox of the file: made by the create that follows the 429, deleted behind our back at the end. */
  let handle: SandboxHandle | undefined
  afterAll(async () => {
    await handle?.destroy().catch(() => undefined)
  })

  it('refuses a missing API key at the factory, naming daytonaSandbox.apiKey and DAYTONA_API_KEY', () => {
    const saved = process.env.DAYTONA_API_KEY
    delete process.env.DAYTONA_API_KEY
    try {
      const error = expectConfigError(
        thrownBy(() => daytonaSandbox({ apiUrl: lab.standin.apiUrl })),
        'daytonaSandbox.apiKey',
      )
      expect(error.message).toMatch(/no API key/)
      expect(error.message).toMatch(/daytonaSandbox\(\{ apiKey \}\) or set DAYTONA_API_KEY/)
      // The fix the message names works: the variable alone is enough.
      process.env.DAYTONA_API_KEY = 'test'
      expect(daytonaSandbox({ apiUrl: lab.standin.apiUrl }).name).toBe('daytona')
    } finally {
      if (saved === undefined) delete process.env.DAYTONA_API_KEY
      else process.env.DAYTONA_API_KEY = saved
    }
  })

  it('a wrong API key fails create with auth-failed, naming the key options, and leaves nothing', async () => {
    const error = expectOperationError(await rejectionOf(lab.provider({ apiKey: 'not-the-key' }).create()), 'auth-failed')
    expect(error.message).toMatch(/refused the API key \(HTTP 401/)
    expect(error.message).toMatch(/daytonaSandbox\(\{ apiKey \}\) or the DAYTONA_API_KEY variable/)
    expect(lab.containers()).toEqual([])
  })

  it('an unknown snapshot is a SandboxConfigError on daytonaSandbox.snapshot, as the stand-in (404) and as Daytona (400) answer it', async () => {
    const provider = lab.provider({ snapshot: 'no-such-snapshot' })
    const error = expectConfigError(await rejectionOf(provider.create()), 'daytonaSandbox.snapshot')
    expect(error.message).toMatch(/snapshot "no-such-snapshot" \(HTTP 404/)
    expect(error.message).toMatch(/Snapshots\), or leave it out/)
    // Daytona's server answers an unknown snapshot with this 400 (docs/design/daytona.md section 3).
    lab.standin.failNext({ route: 'POST /sandbox', status: 400, message: 'Snapshot no-such-snapshot not found. Did you add it through the Daytona Dashboard?' })
    const asDaytona = expectConfigError(await rejectionOf(provider.create()), 'daytonaSandbox.snapshot')
    expect(asDaytona.message).toMatch(/snapshot "no-such-snapshot" \(HTTP 400: Snapshot no-such-snapshot not found/)
    expect(lab.containers()).toEqual([])
  })

  it('a target Daytona refuses is a SandboxConfigError on daytonaSandbox.target', async () => {
    lab.standin.rejectTarget('mars')
    const error = expectConfigError(await rejectionOf(lab.provider({ target: 'mars' }).create()), 'daytonaSandbox.target')
    expect(error.message).toMatch(/refused target "mars"/)
    expect(error.message).toMatch(/leave it out/)
    expect(lab.containers()).toEqual([])
  })

  it('a 429 on create is rate-limited naming the Retry-After; the retried create works and nothing is left of the first', async () => {
    const provider = lab.provider()
    lab.standin.failNext({ route: 'POST /sandbox', status: 429, retryAfterSeconds: 7, message: 'Too many requests' })
    const error = expectOperationError(await rejectionOf(provider.create()), 'rate-limited')
    expect(error.message).toMatch(/HTTP 429: Too many requests/)
    expect(error.message).toMatch(/Retry after 7 s/)
    expect(lab.containers()).toEqual([])
    handle = await provider.create()
    expect(lab.containers()).toHaveLength(1)
    expect((await handle.process.exec('echo created')).stdout).toBe('created\n')
  })

  it('a key revoked mid-run fails the exec with auth-failed; the handle works once the key is accepted again', async () => {
    lab.standin.failNext({ route: 'POST /toolbox/{id}/process/session/{session}/exec', status: 401, message: 'Invalid API key' })
    const error = expectOperationError(await rejectionOf(handle!.process.exec('true')), 'auth-failed')
    expect(error.message).toMatch(/^process\.exec \(sandbox [^)]+\): Daytona refused the API key/)
    expect((await handle!.process.exec('echo again')).stdout).toBe('again\n')
  })

  it('the API unreachable mid-run fails the exec with unreachable; after it answers again the same handle works, nothing lost', async () => {
    await handle!.fs.write('/workspace/before.txt', 'written before the outage\n')
    await handle!.env.set({ BEFORE: 'set before the outage' })
    lab.standin.pause()
    let error: unknown
    try {
      error = await rejectionOf(handle!.process.exec('echo during'))
    } finally {
      lab.standin.resume()
    }
    const failure = expectOperationError(error, 'unreachable')
    expect(failure.message).toMatch(/the Daytona API did not answer/)
    expect(failure.message).toMatch(/Check daytonaSandbox\(\{ apiUrl \}\) and the network/)
    expect(await handle!.process.exec('cat before.txt; printf %s "$BEFORE"')).toEqual({ exitCode: 0, stdout: 'written before the outage\nset before the outage', stderr: '' })
    expect(await handle!.fs.read('/workspace/before.txt')).toBe('written before the outage\n')
  })

  it('a sandbox deleted behind our back fails exec, fs and spawn with not-found, and destroy still resolves', async () => {
    await lab.standin.deleteBehindBack(handle!.id)
    const exec = expectOperationError(await rejectionOf(handle!.process.exec('true')), 'not-found')
    expect(exec.message).toMatch(new RegExp(`sandbox ${handle!.id} no longer exists on Daytona`))
    expect(exec.message).toMatch(/Create a new sandbox/)
    expectOperationError(await rejectionOf(handle!.fs.read('/workspace/before.txt')), 'not-found')
    expectOperationError(await rejectionOf(handle!.process.spawn('sleep 1')), 'not-found')
    await handle!.destroy()
    handle = undefined
    expect(lab.containers()).toEqual([])
  })
})
