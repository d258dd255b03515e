/**
 * The stand-in's failure switches under the real `@daytona/sdk`: an injected
 * 429 with Retry-After, 401 and 503 reach the SDK as its own error classes; a
 * refused target is a 400 naming it; an outage is a connection error until
 * resume; a dropped log stream ends the follow early; a sandbox deleted
 * behind the SDK's back is a 404. Skips naming the engine when it is missing.
 */
import { expect, it } from 'vitest'
import { Daytona, DaytonaAuthenticationError, DaytonaConnectionError, DaytonaNotFoundError, DaytonaRateLimitError, DaytonaServiceUnavailableError, DaytonaValidationError } from '@daytona/sdk'
import { describeWithDocker, dockerLeftovers } from '@testing/support/docker-engine'
import { DAYTONA_IMAGE } from '../src/index.js'
import { standinLab } from './helpers/lab.js'

const { reason, label, use } = await standinLab('faults')

describeWithDocker('failure switches of the stand-in under the real @daytona/sdk', reason, () => {
  const lab = use({ keepSandbox: true })

  it('answers the next matching requests with the status it is told, then normally again', async () => {
    lab.standin.failNext({ route: 'POST /sandbox', status: 429, retryAfterSeconds: 7, message: 'Rate limit exceeded' })
    const limited = await lab.daytona.create({ image: DAYTONA_IMAGE }).catch((error: unknown) => error)
    expect(limited).toBeInstanceOf(DaytonaRateLimitError)
    expect(limited).toMatchObject({ statusCode: 429, message: 'Rate limit exceeded' })
    expect((limited as DaytonaRateLimitError).headers?.['retry-after']).toBe('7')
    expect(lab.standin.containerIds()).toHaveLength(1)

    lab.standin.failNext({ route: 'GET /sandbox/{id}', status: 503, times: 2 })
    await expect(lab.daytona.get(lab.sandbox.id)).rejects.toBeInstanceOf(DaytonaServiceUnavailableError)
    await expect(lab.daytona.get(lab.sandbox.id)).rejects.toBeInstanceOf(DaytonaServiceUnavailableError)
    expect((await lab.daytona.get(lab.sandbox.id)).id).toBe(lab.sandbox.id)

    // A key revoked mid-run: the toolbox refuses it.
    lab.standin.failNext({ route: 'POST /toolbox/{id}/process/execute', status: 401, message: 'Invalid API key' })
    await expect(lab.sandbox.process.executeCommand('true')).rejects.toBeInstanceOf(DaytonaAuthenticationError)
    expect((await lab.sandbox.process.executeCommand('echo ok')).result).toBe('ok\n')
  })

  it('refuses a create for a rejected target with a 400 naming it', async () => {
    lab.standin.rejectTarget('mars')
    const elsewhere = new Daytona({ apiKey: 'test', apiUrl: lab.standin.apiUrl, target: 'mars' })
    try {
      const refused = await elsewhere.create({ image: DAYTONA_IMAGE }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(DaytonaValidationError)
      expect(refused).toMatchObject({ statusCode: 400, message: expect.stringContaining('mars') })
    } finally {
      await elsewhere[Symbol.asyncDispose]()
    }
    expect(lab.standin.containerIds()).toHaveLength(1)
  })

  it('is unreachable while paused: the SDK gets no response, then answers again', async () => {
    lab.standin.pause()
    await expect(lab.daytona.get(lab.sandbox.id)).rejects.toBeInstanceOf(DaytonaConnectionError)
    await expect(lab.sandbox.process.executeCommand('true')).rejects.toBeInstanceOf(DaytonaConnectionError)
    lab.standin.resume()
    expect((await lab.sandbox.process.executeCommand('echo back')).result).toBe('back\n')
  })

  it('drops an open log stream: the follow ends early while the command still runs', async () => {
    await lab.sandbox.process.createSession('drop')
    const { cmdId } = await lab.sandbox.process.executeSessionCommand('drop', { command: 'echo before; sleep 30', runAsync: true })
    const stdout: string[] = []
    let first!: () => void
    const started = new Promise<void>((resolve) => (first = resolve))
    const follow = lab.sandbox.process.getSessionCommandLogs(
      'drop',
      cmdId,
      (chunk) => {
        stdout.push(chunk)
        first()
      },
      () => {},
    )
    await started
    lab.standin.dropLogStreams()
    await follow
    expect(stdout.join('')).toBe('before\n')
    expect((await lab.sandbox.process.getSessionCommand('drop', cmdId)).exitCode).toBeUndefined()
    await lab.sandbox.process.deleteSession('drop')
  })

  it('forgets a sandbox deleted behind the SDK: its container is gone and the next call is a 404', async () => {
    await lab.standin.deleteBehindBack(lab.sandbox.id)
    expect(lab.standin.containerIds()).toEqual([])
    expect((await dockerLeftovers(label)).containers).toEqual([])
    await expect(lab.daytona.get(lab.sandbox.id)).rejects.toBeInstanceOf(DaytonaNotFoundError)
    await expect(lab.sandbox.process.executeCommand('true')).rejects.toBeInstanceOf(DaytonaNotFoundError)
    await expect(lab.sandbox.refreshData()).rejects.toBeInstanceOf(DaytonaNotFoundError)
  })
})
