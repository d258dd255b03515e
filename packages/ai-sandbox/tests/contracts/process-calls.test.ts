// The process-call helpers the container providers share (internal entry):
// option checks, the exec stopper (one kill for the first stop, the typed
// error after it, the kill's own failure when it failed) and a spawned
// process's wait/kill (signal check, abort-kill, wait surfacing a failed
// abort-kill). The providers' conformance suites run them against engines.
import { describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError } from '../../src/contracts/errors.js'
import { checkExecOptions, checkProcessCall, spawnControls, watchExecStop } from '../../src/internal.js'

describe('process-call checks', () => {
  it('rejects a bad timeout, a non-string stdin only when asked, an empty command and an aborted signal', () => {
    expect(() => checkExecOptions({ timeoutMs: 0 }, { stringStdin: false })).toThrow(SandboxConfigError)
    // A string that looks like a number is shown as the string it is.
    expect(() => checkExecOptions({ timeoutMs: '100' as never }, { stringStdin: false })).toThrow('expected a positive number of milliseconds, got "100".')
    expect(() => checkExecOptions({ stdin: 1 as unknown as string }, { stringStdin: true })).toThrow(/exec\.stdin/)
    expect(() => checkExecOptions({ stdin: 1 as unknown as string }, { stringStdin: false })).not.toThrow()
    expect(() => checkProcessCall('p', 'spawn', '  ', undefined)).toThrow(/spawn\.command/)
    const controller = new AbortController()
    controller.abort('why')
    let thrown: unknown
    try {
      checkProcessCall('p', 'exec', 'true', controller.signal)
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(SandboxOperationError)
    expect(thrown).toMatchObject({ reason: 'aborted', provider: 'p', cause: 'why' })
  })
})

describe('watchExecStop', () => {
  it('kills once on the first stop and throws the timeout error after the kill', async () => {
    let kills = 0
    const controller = new AbortController()
    const stopper = watchExecStop({ provider: 'p', command: 'sleep 9', timeoutMs: 1, signal: controller.signal, kill: async () => void kills++ })
    await new Promise((resolve) => setTimeout(resolve, 20))
    controller.abort()
    await expect(stopper.throwIfStopped()).rejects.toMatchObject({ reason: 'timeout', provider: 'p', message: expect.stringContaining('"sleep 9"') })
    stopper.dispose()
    expect(kills).toBe(1)
  })

  it('resolves when no stop came, and surfaces a failed kill instead of the stop error', async () => {
    const quiet = watchExecStop({ provider: 'p', command: 'true', timeoutMs: undefined, signal: undefined, kill: async () => undefined })
    await expect(quiet.throwIfStopped()).resolves.toBeUndefined()
    quiet.dispose()
    const controller = new AbortController()
    const failing = watchExecStop({ provider: 'p', command: 'true', timeoutMs: undefined, signal: controller.signal, kill: () => Promise.reject(new Error('kill failed')) })
    controller.abort()
    await expect(failing.throwIfStopped()).rejects.toThrow('kill failed')
    failing.dispose()
  })
})

describe('spawnControls', () => {
  it('checks the signal, and an abort runs the kill whose failure wait() reports', async () => {
    const exit = new Promise<never>(() => undefined)
    const signals: string[] = []
    const controller = new AbortController()
    const controls = spawnControls({ exit, signal: controller.signal, kill: async (signal) => void signals.push(signal) })
    await expect(controls.kill('SIGHUP' as 'SIGTERM')).rejects.toThrow(/kill\.signal/)
    await controls.kill()
    expect(signals).toEqual(['SIGTERM'])

    const failing = new AbortController()
    failing.abort()
    const aborted = spawnControls({ exit, signal: failing.signal, kill: () => Promise.reject(new Error('kill failed')) })
    await expect(aborted.wait()).rejects.toThrow('kill failed')
  })
})
