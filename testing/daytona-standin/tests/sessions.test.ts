/**
 * Sessions through the real `@daytona/sdk` on the stand-in: sync exec with
 * stdout and stderr apart, an async command followed over the log WebSocket
 * while it runs, its exit code only after the end, stdin input, cwd and env
 * carried between commands, and delete killing a running command. Skips
 * naming the engine when it is missing; fails under REQUIRE_DOCKER=1.
 */
import { expect, it } from 'vitest'
import { describeWithDocker } from '@testing/support/docker-engine'
import { standinLab } from './helpers/lab.js'

const { reason, use } = await standinLab('sessions')

/** How many processes in the sandbox run exactly `sleep 30`. */
const COUNT_SLEEPS = `for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done | grep -c '^sleep 30 $'`

describeWithDocker('sessions on the stand-in under the real @daytona/sdk', reason, () => {
  const lab = use()

  it('runs a sync command with stdout and stderr apart, and keeps cwd and env between commands', async () => {
    await lab.sandbox.process.createSession('s1')
    const run = await lab.sandbox.process.executeSessionCommand('s1', { command: 'echo out; echo err >&2; exit 4' })
    expect(run).toMatchObject({ exitCode: 4, stdout: 'out\n', stderr: 'err\n' })
    expect(run.output).toMatch(/^(out\nerr\n|err\nout\n)$/)
    await lab.sandbox.process.executeSessionCommand('s1', { command: 'cd /tmp && export KEPT=yes' })
    expect((await lab.sandbox.process.executeSessionCommand('s1', { command: 'pwd; echo $KEPT' })).stdout).toBe('/tmp\nyes\n')
    expect(await lab.sandbox.process.getSession('s1')).toMatchObject({ sessionId: 's1', commands: [{ command: 'echo out; echo err >&2; exit 4', exitCode: 4 }, {}, {}] })
    expect((await lab.sandbox.process.listSessions()).map((s) => s.sessionId)).toEqual(['s1'])
    await lab.sandbox.process.deleteSession('s1')
    await expect(lab.sandbox.process.getSession('s1')).rejects.toMatchObject({ statusCode: 404 })
  })

  it('follows an async command over the log socket while it runs, exit code only after the end', async () => {
    await lab.sandbox.process.createSession('s2')
    const { cmdId } = await lab.sandbox.process.executeSessionCommand('s2', { command: 'for i in 1 2 3; do echo $i; sleep 0.2; done; echo e >&2', runAsync: true })
    expect(cmdId).toBeTruthy()
    expect((await lab.sandbox.process.getSessionCommand('s2', cmdId)).exitCode).toBeUndefined()
    const stdout: string[] = []
    const stderr: string[] = []
    let runningAtFirstChunk: boolean | undefined
    await lab.sandbox.process.getSessionCommandLogs(
      's2',
      cmdId,
      (chunk) => {
        stdout.push(chunk)
        runningAtFirstChunk ??= stdout.join('') !== '1\n2\n3\n'
      },
      (chunk) => stderr.push(chunk),
    )
    expect(runningAtFirstChunk, 'the first chunk came before the command had written everything').toBe(true)
    expect(stdout.length).toBeGreaterThan(1)
    expect(stdout.join('')).toBe('1\n2\n3\n')
    expect(stderr.join('')).toBe('e\n')
    expect(await lab.sandbox.process.getSessionCommand('s2', cmdId)).toMatchObject({ id: cmdId, exitCode: 0 })
    expect(await lab.sandbox.process.getSessionCommandLogs('s2', cmdId)).toEqual({ output: '1\n2\n3\ne\n', stdout: '1\n2\n3\n', stderr: 'e\n' })
    // Following an ended command sends what it wrote and closes.
    const again: string[] = []
    await lab.sandbox.process.getSessionCommandLogs('s2', cmdId, (chunk) => again.push(chunk), () => {})
    expect(again.join('')).toBe('1\n2\n3\n')
    await lab.sandbox.process.deleteSession('s2')
  })

  it('sends input to a command stdin', async () => {
    await lab.sandbox.process.createSession('s3')
    const { cmdId } = await lab.sandbox.process.executeSessionCommand('s3', { command: 'read line; echo got:$line', runAsync: true })
    await lab.sandbox.process.sendSessionCommandInput('s3', cmdId, 'hello\n')
    await lab.sandbox.process.getSessionCommandLogs('s3', cmdId, () => {}, () => {})
    expect(await lab.sandbox.process.getSessionCommand('s3', cmdId)).toMatchObject({ exitCode: 0 })
    expect((await lab.sandbox.process.getSessionCommandLogs('s3', cmdId)).stdout).toBe('got:hello\n')
    await lab.sandbox.process.deleteSession('s3')
  })

  it('stops a running command when its session is deleted', async () => {
    await lab.sandbox.process.createSession('s4')
    const { cmdId } = await lab.sandbox.process.executeSessionCommand('s4', { command: 'sleep 30', runAsync: true })
    await expect.poll(async () => (await lab.sandbox.process.executeCommand(COUNT_SLEEPS)).result.trim(), { timeout: 2000, interval: 100 }).toBe('1')
    expect((await lab.sandbox.process.getSessionCommand('s4', cmdId)).exitCode).toBeUndefined()
    await lab.sandbox.process.deleteSession('s4')
    expect((await lab.sandbox.process.executeCommand(COUNT_SLEEPS)).result.trim()).toBe('0')
  })
})
