/**
 * The stand-in's failure switches under the real `@daytona/sdk`: an injected
 * 429 with Retry-After, 401 and 503 reach the SDK as its own error classes; a
 * refused target is a 400 naming it; an outage is a connection error until
 * resume; a dropped log stream ends the follow early; a sandbox deleted
 * behind the SDK's back is a 404. Skips naming the engine when it is missing.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { Sandbox } from '@daytona/sdk'
import { Daytona, DaytonaAuthenticationError, DaytonaConnectionError, DaytonaNotFoundError, DaytonaRateLimitError, DaytonaServiceUnavailableError, DaytonaValidationError } from '@daytona/sdk'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import type { DaytonaStandin } from '../src/index.js'
import { DAYTONA_IMAGE, startDaytonaStandin } from '../src/index.js'

const RUN = { 'tanstack-test.run': `daytona-standin-faults-${randomUUID().slice(0, 8)}` }
const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
const reason = await dockerMissing([DAYTONA_IMAGE], { needsBridge: false })

describeWithDocker('failure switches of the stand-in under the real @daytona/sdk', reason, () => {
  let standin: DaytonaStandin
  let daytona: Daytona
  let sandbox: Sandbox

  beforeAll(async () => {
    standin = await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: RUN })
    daytona = new Daytona({ apiKey: 'test', apiUrl: standin.apiUrl })
    sandbox = await daytona.create({ image: DAYTONA_IMAGE })
  })

  afterAll(async () => {
    await daytona?.[Symbol.asyncDispose]()
    await standin?.close()
    expect(await dockerLeftovers(label), 'every container was removed').toEqual({ containers: [], images: [], volumes: [] })
  })

  it('answers the next matching requests with the status it is told, then normally again', async () => {
    standin.failNext({ route: 'POST /sandbox', status: 429, retryAfterSeconds: 7, message: 'Rate limit exceeded' })
    const limited = await daytona.create({ image: DAYTONA_IMAGE }).catch((error: unknown) => error)
    expect(limited).toBeInstanceOf(DaytonaRateLimitError)
    expect(limited).toMatchObject({ statusCode: 429, message: 'Rate limit exceeded' })
    expect((limited as DaytonaRateLimitError).headers?.['retry-after']).toBe('7')
    expect(standin.containerIds()).toHaveLength(1)

    standin.failNext({ route: 'GET /sandbox/{id}', status: 503, times: 2 })
    await expect(daytona.get(sandbox.id)).rejects.toBeInstanceOf(DaytonaServiceUnavailableError)
    await expect(daytona.get(sandbox.id)).rejects.toBeInstanceOf(DaytonaServiceUnavailableError)
    expect((await daytona.get(sandbox.id)).id).toBe(sandbox.id)

    // A key revoked mid-run: the toolbox refuses it.
    standin.failNext({ route: 'POST /toolbox/{id}/process/execute', status: 401, message: 'Invalid API key' })
    await expect(sandbox.process.executeCommand('true')).rejects.toBeInstanceOf(DaytonaAuthenticationError)
    expect((await sandbox.process.executeCommand('echo ok')).result).toBe('ok\n')
  })

  it('refuses a create for a rejected target with a 400 naming it', async () => {
    standin.rejectTarget('mars')
    const elsewhere = new Daytona({ apiKey: 'test', apiUrl: standin.apiUrl, target: 'mars' })
    try {
      const refused = await elsewhere.create({ image: DAYTONA_IMAGE }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(DaytonaValidationError)
      expect(refused).toMatchObject({ statusCode: 400, message: expect.stringContaining('mars') })
    } finally {
      await elsewhere[Symbol.asyncDispose]()
    }
    expect(standin.containerIds()).toHaveLength(1)
  })

  it('is unreachable while paused: the SDK gets no response, then answers again', async () => {
    standin.pause()
    await expect(daytona.get(sandbox.id)).rejects.toBeInstanceOf(DaytonaConnectionError)
    await expect(sandbox.process.executeCommand('true')).rejects.toBeInstanceOf(DaytonaConnectionError)
    standin.resume()
    expect((await sandbox.process.executeCommand('echo back')).result).toBe('back\n')
  })

  it('drops an open log stream: the follow ends early while the command still runs', async () => {
    await sandbox.process.createSession('drop')
    const { cmdId } = await sandbox.process.executeSessionCommand('drop', { command: 'echo before; sleep 30', runAsync: true })
    const stdout: string[] = []
    let first!: () => void
    const started = new Promise<void>((resolve) => (first = resolve))
    const follow = sandbox.process.getSessionCommandLogs(
      'drop',
      cmdId,
      (chunk) => {
        stdout.push(chunk)
        first()
      },
      () => {},
    )
    await started
    standin.dropLogStreams()
    await follow
    expect(stdout.join('')).toBe('before\n')
    expect((await sandbox.process.getSessionCommand('drop', cmdId)).exitCode).toBeUndefined()
    await sandbox.process.deleteSession('drop')
  })

  it('forgets a sandbox deleted behind the SDK: its container is gone and the next call is a 404', async () => {
    await standin.deleteBehindBack(sandbox.id)
    expect(standin.containerIds()).toEqual([])
    expect((await dockerLeftovers(label)).containers).toEqual([])
    await expect(daytona.get(sandbox.id)).rejects.toBeInstanceOf(DaytonaNotFoundError)
    await expect(sandbox.process.executeCommand('true')).rejects.toBeInstanceOf(DaytonaNotFoundError)
    await expect(sandbox.refreshData()).rejects.toBeInstanceOf(DaytonaNotFoundError)
  })
})
