/**
 * The real `@daytona/sdk` as the only client of the stand-in, on a real
 * engine: create (image name, env, labels), get, list, executeCommand (what
 * comes back recorded exactly; cwd, env, timeout), the file operations, stop
 * and start with the files kept, the error classes for unknown sandboxes,
 * files and snapshots and a wrong key, delete, and no container left. Skips
 * naming the engine when it is missing; fails under REQUIRE_DOCKER=1.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Daytona, DaytonaAuthenticationError, DaytonaFileNotFoundError, DaytonaNotFoundError, DaytonaProcessExecutionTimeoutError } from '@daytona/sdk'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import type { DaytonaStandin } from '../src/index.js'
import { DAYTONA_IMAGE, SANDBOX_WORKDIR, startDaytonaStandin } from '../src/index.js'

const RUN = { 'tanstack-test.run': `daytona-standin-${randomUUID().slice(0, 8)}` }
const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
const reason = await dockerMissing([DAYTONA_IMAGE], { needsBridge: false })

describeWithDocker('the stand-in under the real @daytona/sdk', reason, () => {
  let standin: DaytonaStandin
  let daytona: Daytona

  beforeAll(async () => {
    standin = await startDaytonaStandin({ image: DAYTONA_IMAGE, labels: RUN })
    daytona = new Daytona({ apiKey: 'test', apiUrl: standin.apiUrl })
  })

  afterAll(async () => {
    await daytona?.[Symbol.asyncDispose]()
    await standin?.close()
    expect(await dockerLeftovers(label), 'every container was removed').toEqual({ containers: [], images: [], volumes: [] })
  })

  it('runs a sandbox through its life: create, exec, files, stop and start, delete', async () => {
    const sandbox = await daytona.create({ image: DAYTONA_IMAGE, envVars: { GREETING: 'hello' }, labels: { suite: RUN['tanstack-test.run'] } })
    expect(sandbox.state).toBe('started')
    expect(sandbox.toolboxProxyUrl).toBe(standin.toolboxProxyUrl)
    expect(sandbox.labels).toEqual({ suite: RUN['tanstack-test.run'], 'code-toolbox-language': 'python' })
    expect(standin.containerIds()).toHaveLength(1)

    // What the SDK returns: one combined `result` (stdout and stderr in the order written) and the exit code.
    expect(await sandbox.process.executeCommand('echo hi; echo err >&2; exit 3')).toEqual({ exitCode: 3, result: 'hi\nerr\n', artifacts: { stdout: 'hi\nerr\n' } })
    expect((await sandbox.process.executeCommand('for i in 1 2 3; do echo o$i; echo e$i >&2; done')).result).toBe('o1\ne1\no2\ne2\no3\ne3\n')
    expect((await sandbox.process.executeCommand('id -un; pwd; echo "$GREETING $EXTRA"; sudo -n id -un')).result).toBe(`daytona\n${SANDBOX_WORKDIR}\nhello \nroot\n`)
    expect((await sandbox.process.executeCommand('pwd; echo "$EXTRA"', '/tmp', { EXTRA: 'x y' })).result).toBe('/tmp\nx y\n')
    const slow = Date.now()
    await expect(sandbox.process.executeCommand('sleep 5', undefined, undefined, 1)).rejects.toBeInstanceOf(DaytonaProcessExecutionTimeoutError)
    expect(Date.now() - slow).toBeLessThan(4000)

    const bytes = Buffer.from([0, 1, 2, 255, 10, 13, 0x7f, 0x80])
    await sandbox.fs.uploadFile(bytes, 'notes/a.bin')
    expect(Buffer.compare(await sandbox.fs.downloadFile('notes/a.bin'), bytes)).toBe(0)
    expect(await sandbox.fs.getFileDetails(`${SANDBOX_WORKDIR}/notes/a.bin`)).toMatchObject({ name: 'a.bin', size: 8, isDir: false, owner: 'daytona', mode: '-rw-r--r--', permissions: '0644' })
    await sandbox.fs.createFolder('notes/sub', '750')
    await sandbox.fs.moveFiles('notes/a.bin', 'notes/sub/b.bin')
    const listed = await sandbox.fs.listFiles('notes')
    expect(listed.map((f) => [f.name, f.isDir, f.permissions])).toEqual([['sub', true, '0750']])
    expect((await sandbox.fs.listFiles('notes', { depth: 2 })).map((f) => f.path).sort()).toEqual([`${SANDBOX_WORKDIR}/notes/sub`, `${SANDBOX_WORKDIR}/notes/sub/b.bin`])
    await expect(sandbox.fs.downloadFile('notes/a.bin')).rejects.toBeInstanceOf(DaytonaNotFoundError)
    await expect(sandbox.fs.getFileDetails('notes/a.bin')).rejects.toBeInstanceOf(DaytonaFileNotFoundError)
    await expect(sandbox.fs.deleteFile('notes/sub')).rejects.toThrow(/is a directory/)

    expect((await daytona.get(sandbox.id)).id).toBe(sandbox.id)
    const listedSandboxes = []
    for await (const s of daytona.list({ labels: { suite: RUN['tanstack-test.run'] } })) listedSandboxes.push(s.id)
    expect(listedSandboxes).toEqual([sandbox.id])

    await sandbox.stop()
    expect(sandbox.state).toBe('stopped')
    await expect(sandbox.process.executeCommand('true')).rejects.toThrow(/is stopped/)
    await sandbox.start()
    expect(sandbox.state).toBe('started')
    expect(Buffer.compare(await sandbox.fs.downloadFile('notes/sub/b.bin'), bytes)).toBe(0)
    await sandbox.fs.deleteFile('notes', true)
    expect(await sandbox.fs.listFiles('.')).toEqual([])

    await sandbox.delete()
    await expect(daytona.get(sandbox.id)).rejects.toMatchObject({ statusCode: 404 })
    await expect(daytona.get(sandbox.id)).rejects.toBeInstanceOf(DaytonaNotFoundError)
    expect(standin.containerIds()).toEqual([])
    expect((await dockerLeftovers(label)).containers).toEqual([])
  })

  it('answers an unknown snapshot with 404 and a wrong key with 401', async () => {
    await expect(daytona.create({ snapshot: 'no-such-snapshot' })).rejects.toBeInstanceOf(DaytonaNotFoundError)
    const wrong = new Daytona({ apiKey: 'wrong', apiUrl: standin.apiUrl })
    try {
      await expect(wrong.get('anything')).rejects.toBeInstanceOf(DaytonaAuthenticationError)
    } finally {
      await wrong[Symbol.asyncDispose]()
    }
  })
})
