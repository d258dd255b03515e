/**
 * The lifecycle routes past create and delete, under the real
 * `@daytona/sdk`: the autostop interval kept on the DTO; a snapshot taken
 * from a sandbox (get, list by source, a create from it with the files but
 * not the source's env, delete with its image gone once unused); a fork with
 * the same files and settings; archive of a stopped sandbox only, and start
 * from archived with the files kept. Every committed image is removed.
 * Skips naming the engine when it is missing; fails under REQUIRE_DOCKER=1.
 */
import { expect, it } from 'vitest'
import { DaytonaConflictError, DaytonaNotFoundError, DaytonaUnprocessableEntityError, DaytonaValidationError } from '@daytona/sdk'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { DAYTONA_IMAGE } from '../src/index.js'
import { standinLab } from './helpers/lab.js'

const { reason, label, use } = await standinLab('lifecycle')

describeWithDocker('snapshots, fork, archive and autostop on the stand-in under the real @daytona/sdk', reason, () => {
  const lab = use({ create: { envVars: { SECRET: 's3' }, labels: { role: 'source' } } })

  it('keeps the autostop interval on the DTO', async () => {
    await lab.sandbox.setAutostopInterval(0)
    expect((await lab.daytona.get(lab.sandbox.id)).autoStopInterval).toBe(0)
    await lab.sandbox.setAutostopInterval(42)
    expect(lab.sandbox.autoStopInterval).toBe(42)
    expect((await lab.daytona.get(lab.sandbox.id)).autoStopInterval).toBe(42)
  })

  it('snapshots a sandbox: a create from it has its files but not its env; get, list and delete, the image gone once unused', async () => {
    await lab.sandbox.fs.uploadFile(Buffer.from('from the source\n'), 'snap/a.txt')
    const took = Date.now()
    await lab.sandbox.createSnapshot('lifecycle-snap')
    // The commit is done before the answer, which is already back in `started`: the SDK does not poll.
    expect(Date.now() - took).toBeLessThan(5000)
    expect(lab.sandbox.state).toBe('started')
    await expect(lab.sandbox.createSnapshot('lifecycle-snap')).rejects.toBeInstanceOf(DaytonaConflictError)

    const snapshot = await lab.daytona.snapshot.get('lifecycle-snap')
    expect(snapshot).toMatchObject({ name: 'lifecycle-snap', state: 'active', sourceSandboxId: lab.sandbox.id })
    expect(await lab.daytona.snapshot.get(snapshot.id)).toMatchObject({ name: 'lifecycle-snap' })
    await expect(lab.daytona.snapshot.get('no-such-snapshot')).rejects.toBeInstanceOf(DaytonaNotFoundError)
    expect(await lab.daytona.snapshot.list({ sourceSandboxId: lab.sandbox.id })).toEqual({ items: [expect.objectContaining({ id: snapshot.id })], total: 1, page: 1, totalPages: 1 })
    expect((await dockerLeftovers(label)).images).toHaveLength(1)

    const copy = await lab.daytona.create({ snapshot: 'lifecycle-snap', envVars: { OWN: 'mine' } })
    expect(copy).toMatchObject({ state: 'started', snapshot: 'lifecycle-snap' })
    expect((await copy.process.executeCommand('cat snap/a.txt; echo "${SECRET-unset} $OWN"')).result).toBe('from the source\nunset mine\n')

    // Deleted while a sandbox still runs from it: the name goes at once, the image with that sandbox.
    await lab.daytona.snapshot.delete(snapshot)
    await expect(lab.daytona.snapshot.get('lifecycle-snap')).rejects.toBeInstanceOf(DaytonaNotFoundError)
    await expect(lab.daytona.create({ snapshot: 'lifecycle-snap' })).rejects.toBeInstanceOf(DaytonaNotFoundError)
    expect((await dockerLeftovers(label)).images).toHaveLength(1)
    await copy.delete()
    expect((await dockerLeftovers(label)).images).toEqual([])

    // A snapshot the stand-in was given leaves the registry; its image is not the stand-in's to remove.
    await lab.daytona.snapshot.delete('default')
    await expect(lab.daytona.create({ snapshot: 'default' })).rejects.toBeInstanceOf(DaytonaNotFoundError)
    expect(await dockerMissing([DAYTONA_IMAGE], { needsBridge: false })).toBeNull()
  })

  it('forks a started sandbox: the same files and settings, a filesystem of its own, its image gone with it', async () => {
    await lab.sandbox.fs.uploadFile(Buffer.from('before the fork\n'), 'fork/a.txt')
    const forked = await lab.daytona.fork(lab.sandbox, { name: 'lifecycle-fork' })
    expect(forked).toMatchObject({ name: 'lifecycle-fork', state: 'started', env: { SECRET: 's3' }, labels: { role: 'source' }, autoStopInterval: 42 })
    expect(forked.id).not.toBe(lab.sandbox.id)
    expect(lab.sandbox.state).toBe('started')
    expect((await forked.process.executeCommand('cat fork/a.txt; echo "$SECRET"; touch fork/b.txt')).result).toBe('before the fork\ns3\n')
    expect((await lab.sandbox.fs.listFiles('fork')).map((f) => f.name)).toEqual(['a.txt'])
    await expect(lab.sandbox.fork({ name: 'lifecycle-fork' })).rejects.toBeInstanceOf(DaytonaConflictError)

    // Daytona's server refuses to fork container-class sandboxes (422); a switch makes the stand-in say so.
    lab.standin.failNext({ route: 'POST /sandbox/{id}/fork', status: 422, message: 'Forking is not supported for this sandbox' })
    await expect(lab.sandbox.fork()).rejects.toBeInstanceOf(DaytonaUnprocessableEntityError)

    await forked.delete()
    expect((await dockerLeftovers(label)).images).toEqual([])
  })

  it('archives only a stopped sandbox (which can still be snapshotted), and starts it from archived with its files', async () => {
    await lab.sandbox.fs.uploadFile(Buffer.from('kept\n'), 'kept.txt')
    await expect(lab.sandbox.archive()).rejects.toThrow(/only a stopped sandbox can be archived/)
    await expect(lab.sandbox.archive()).rejects.toBeInstanceOf(DaytonaValidationError)
    await lab.sandbox.stop()
    await expect(lab.sandbox.fork()).rejects.toBeInstanceOf(DaytonaValidationError)
    // A stopped sandbox can be snapshotted too, and stays stopped.
    await lab.sandbox.createSnapshot('lifecycle-stopped')
    expect(lab.sandbox.state).toBe('stopped')
    await lab.daytona.snapshot.delete('lifecycle-stopped')
    await lab.sandbox.archive()
    expect(lab.sandbox.state).toBe('archived')
    expect((await lab.daytona.get(lab.sandbox.id)).state).toBe('archived')
    await expect(lab.sandbox.process.executeCommand('true')).rejects.toThrow(/is archived/)
    await lab.sandbox.start()
    expect(lab.sandbox.state).toBe('started')
    expect((await lab.sandbox.fs.downloadFile('kept.txt')).toString()).toBe('kept\n')
  })
})
