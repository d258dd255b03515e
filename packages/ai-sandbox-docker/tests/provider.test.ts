// Engine specifics of the provider: bad input (no engine, a missing image, a
// container removed behind our back, bad options) gives typed errors and
// leaves no container; snapshot, restore and fork; resume of a stopped
// container from a fresh provider; network none and host.docker.internal;
// resource limits; bind mounts; labels.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { SandboxConfigError, SandboxOperationError, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import { DOCKER_SANDBOX_LABELS, dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { RUN_LABEL, leftovers, rejectionOf, useDockerSandboxes } from './helpers/sandboxes.js'

/**
 * Forks sleeps until the pids limit refuses one, then keeps every slot: BusyBox ash exits on a failed fork, and
 * its EXIT trap reports the cgroup's count (v1 or v2) with builtins and execs a sleep in place of the shell (no new slot).
 */
const FILL_PID_SLOTS = [
  "trap 'read c < /sys/fs/cgroup/pids/pids.current 2>/dev/null || read c < /sys/fs/cgroup/pids.current",
  'read m < /sys/fs/cgroup/pids/pids.max 2>/dev/null || read m < /sys/fs/cgroup/pids.max',
  'echo "full $c/$m"',
  "exec sleep 1000' EXIT",
  'while :; do sleep 1000 & done 2>/dev/null',
].join('\n')

/** The first line of `stream`, without its newline. */
async function firstLine(stream: AsyncIterable<string>): Promise<string> {
  let text = ''
  for await (const chunk of stream) {
    text += chunk
    if (text.includes('\n')) break
  }
  return text.split('\n')[0]!
}

describeWithDocker('docker provider', await dockerMissing([DEBIAN_IMAGE, BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const sandboxes = useDockerSandboxes('provider')
  const mine = () => leftovers(sandboxes.docker, `${RUN_LABEL}=${sandboxes.labels[RUN_LABEL]}`)

  it('labels the container, runs an init process and the workspace as working directory', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, labels: { team: 'a b' } }, { key: 'thread:1', labels: { purpose: 'test' } })
    const info = await sandboxes.docker.getContainer(handle.id).inspect()
    expect(info.Config.Labels).toMatchObject({ [DOCKER_SANDBOX_LABELS.sandbox]: '1', [DOCKER_SANDBOX_LABELS.key]: 'thread:1', [DOCKER_SANDBOX_LABELS.workspace]: '/workspace', team: 'a b', purpose: 'test' })
    expect(info.HostConfig.Init).toBe(true)
    expect(info.Config.WorkingDir).toBe('/workspace')
    expect((await handle.process.exec('cat /proc/1/comm')).stdout.trim()).toBe('docker-init')
  })

  it('fails with a typed error naming the socket when no engine answers', async () => {
    const provider = dockerSandbox({ image: BUSYBOX_IMAGE, docker: { socketPath: '/tmp/tanstack-no-docker.sock' } })
    const error = await rejectionOf(provider.create())
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('create-failed')
    expect(error.message).toMatch(/not answering at unix:\/\/\/tmp\/tanstack-no-docker\.sock/)
    expect(error.message).toMatch(/Docker Desktop/)
    expect(error.message, 'no advice that only holds inside our source checkout').not.toMatch(/this repository|engine\.sh/)
  })

  it('fails with a typed error naming a missing image and how to build it, leaving no container', async () => {
    const error = await rejectionOf(sandboxes.provider({ image: 'tanstack-sandbox-does-not-exist:1' }).create())
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('create-failed')
    expect(error.message).toMatch(/"tanstack-sandbox-does-not-exist:1" does not exist/)
    expect(error.message).toMatch(/never pulls: fetch or build it on that engine first \(`docker pull <image>`/)
    expect(error.message, 'the source-checkout script is named as such, not as "this repository"').not.toMatch(/this repository/)
    expect((await mine()).containers).toEqual([])
  })

  it('removes the container again when it cannot start (an unknown user)', async () => {
    const error = await rejectionOf(sandboxes.provider({ image: BUSYBOX_IMAGE, user: 'nobody-here' }).create())
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect(error.field).toBe('dockerSandbox.user')
    expect((await mine()).containers).toEqual([])
  })

  it('gives typed errors after the container was removed behind our back', async () => {
    const provider = sandboxes.provider({ image: BUSYBOX_IMAGE })
    const handle = sandboxes.track(await provider.create())
    await sandboxes.docker.getContainer(handle.id).remove({ force: true })
    for (const call of [() => handle.process.exec('true'), () => handle.fs.read('x'), () => handle.fs.write('x', 'y'), () => handle.process.spawn('true'), () => handle.snapshot!()]) {
      const error = await rejectionOf(call())
      expect(error).toBeInstanceOf(SandboxOperationError)
      expect(error.reason, error.message).toBe('not-found')
      expect(error.message).toMatch(/no longer exists/)
    }
    expect(await provider.resume({ id: handle.id })).toBeNull()
    await handle.destroy()
  })

  it('refuses invalid options with the field name', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'dockerSandbox.image'],
      [{ image: 'x', resources: { memory: '1k' } }, 'dockerSandbox.resources.memory'],
      [{ image: 'x', resources: { cpus: -1 } }, 'dockerSandbox.resources.cpus'],
      [{ image: 'x', workspaceDir: 'relative' }, 'dockerSandbox.workspaceDir'],
      [{ image: 'x', workspaceDir: '/' }, 'dockerSandbox.workspaceDir'],
      [{ image: 'x', user: 'a b' }, 'dockerSandbox.user'],
      [{ image: 'x', labels: { team: 1 } }, 'dockerSandbox.labels.team'],
      [{ image: 'x', mounts: [{ source: 'rel', target: '/x' }] }, 'dockerSandbox.mounts.0.source'],
      [{ image: 'x', publishPorts: [70000] }, 'dockerSandbox.publishPorts.0'],
      [{ image: 'x', bogus: true }, 'dockerSandbox.bogus'],
    ]
    for (const [config, field] of cases) {
      let error: unknown
      try {
        dockerSandbox(config as never)
      } catch (caught) {
        error = caught
      }
      expect(error, field).toBeInstanceOf(SandboxConfigError)
      expect((error as SandboxConfigError).field).toBe(field)
    }
  })

  it('refuses to destroy a container it did not create', async () => {
    const other = await sandboxes.docker.createContainer({ Image: BUSYBOX_IMAGE, Cmd: ['true'], Labels: { ...sandboxes.labels } })
    try {
      const error = await rejectionOf(sandboxes.provider({ image: BUSYBOX_IMAGE }).destroy({ id: other.id }))
      expect(error).toBeInstanceOf(SandboxConfigError)
      expect((await other.inspect()).Id).toBe(other.id)
    } finally {
      await other.remove({ force: true })
    }
  })

  it('snapshot, restore and fork keep files and env; a fork takes its image with it', async () => {
    const provider = sandboxes.provider({ image: DEBIAN_IMAGE })
    const handle = sandboxes.track(await provider.create({ env: { FROM_CREATE: 'c' } }))
    await handle.fs.write('state.txt', 'v1')
    await handle.env.set({ FROM_SET: 's' })
    const snapshot = await handle.snapshot!('before v2')
    expect(snapshot.label).toBe('before v2')
    const image = await sandboxes.docker.getImage(snapshot.snapshotId).inspect()
    expect(image.Config.Labels).toMatchObject({ [DOCKER_SANDBOX_LABELS.snapshot]: handle.id, [DOCKER_SANDBOX_LABELS.snapshotLabel]: 'before v2' })
    await handle.fs.write('state.txt', 'v2')
    const restored = sandboxes.track(await provider.restoreSnapshot!({ snapshotId: snapshot.snapshotId, env: { FROM_RESTORE: 'r' }, key: 'restored' }))
    expect(await restored.fs.read('state.txt')).toBe('v1')
    expect((await restored.process.exec('echo "$FROM_CREATE $FROM_SET $FROM_RESTORE"')).stdout).toBe('c s r\n')
    const restoredLabels = (await sandboxes.docker.getContainer(restored.id).inspect()).Config.Labels
    expect(restoredLabels[DOCKER_SANDBOX_LABELS.key]).toBe('restored')
    expect(restoredLabels[DOCKER_SANDBOX_LABELS.snapshot]).toBe('')

    const fork = await handle.fork!()
    expect(await fork.fs.read('state.txt')).toBe('v2')
    const forkImage = (await sandboxes.docker.getContainer(fork.id).inspect()).Config.Labels[DOCKER_SANDBOX_LABELS.forkImage]!
    expect(forkImage).toMatch(/^sha256:/)
    await fork.destroy()
    expect(await rejectionOf(sandboxes.docker.getImage(forkImage).inspect())).toMatchObject({ statusCode: 404 })

    const notSnapshot = await rejectionOf(provider.restoreSnapshot!({ snapshotId: BUSYBOX_IMAGE }))
    expect(notSnapshot).toBeInstanceOf(SandboxConfigError)
    const gone = await rejectionOf(provider.restoreSnapshot!({ snapshotId: 'sha256:0000000000000000000000000000000000000000000000000000000000000000' }))
    expect(gone.reason).toBe('not-found')
  })

  it('deleteSnapshot removes the image, or untags it while a restored sandbox uses it and removes it with that sandbox', async () => {
    const provider = sandboxes.provider({ image: BUSYBOX_IMAGE })
    const handle = sandboxes.track(await provider.create())
    const unused = await handle.snapshot!()
    await provider.deleteSnapshot!({ snapshotId: unused.snapshotId })
    expect(await rejectionOf(sandboxes.docker.getImage(unused.snapshotId).inspect())).toMatchObject({ statusCode: 404 })
    await provider.deleteSnapshot!({ snapshotId: unused.snapshotId }) // idempotent

    const used = await handle.snapshot!()
    const restored = await provider.restoreSnapshot!({ snapshotId: used.snapshotId })
    await provider.deleteSnapshot!({ snapshotId: used.snapshotId })
    expect((await sandboxes.docker.getImage(used.snapshotId).inspect()).RepoTags ?? []).toEqual([])
    await restored.destroy()
    expect(await rejectionOf(sandboxes.docker.getImage(used.snapshotId).inspect())).toMatchObject({ statusCode: 404 })
    expect(await rejectionOf(provider.deleteSnapshot!({ snapshotId: BUSYBOX_IMAGE }))).toBeInstanceOf(SandboxConfigError)
  })

  it('resume starts a stopped container, and a fresh provider sees files and env.set', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    await handle.fs.write('kept.txt', 'kept')
    await handle.env.set({ KEPT: 'yes' })
    await sandboxes.docker.getContainer(handle.id).stop({ t: 1 })
    const resumed = await sandboxes.provider({ image: BUSYBOX_IMAGE }).resume({ id: handle.id })
    expect(resumed).not.toBeNull()
    sandboxes.track(resumed!)
    expect((await sandboxes.docker.getContainer(handle.id).inspect()).State.Running).toBe(true)
    expect(await resumed!.fs.read('kept.txt')).toBe('kept')
    expect((await resumed!.process.exec('echo $KEPT')).stdout).toBe('yes\n')
  })

  it("network 'none' has no interface but lo, and ports is off", async () => {
    const provider = sandboxes.provider({ image: BUSYBOX_IMAGE, network: 'none' })
    expect(provider.capabilities().ports).toBe(false)
    expect(provider.capabilities().networkPolicy).toBe(true)
    const handle = sandboxes.track(await provider.create())
    const interfaces = (await handle.process.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '")).stdout.trim().split('\n')
    expect(interfaces).toEqual(['lo'])
    expect((await handle.process.exec('cat /etc/hosts')).stdout).not.toMatch(/host\.docker\.internal/)
    expect(await rejectionOf(handle.ports.connect(3000))).toBeInstanceOf(UnsupportedCapabilityError)
  })

  it('reaches a host server on 0.0.0.0 through host.docker.internal on the default bridge', async () => {
    const server = createServer((_request, response) => response.end('hello from the host'))
    await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
      const result = await handle.process.exec(`wget -qO- http://host.docker.internal:${port}/`)
      expect(result).toMatchObject({ exitCode: 0, stdout: 'hello from the host' })
    } finally {
      server.close()
    }
  })

  it('publishes ports on 127.0.0.1 and ports.connect returns the mapped one', async () => {
    const handle = await sandboxes.create({ image: DEBIAN_IMAGE, publishPorts: [8080] })
    const connection = await handle.ports.connect(8080)
    expect(connection.hostname).toBe('127.0.0.1')
    expect(connection.port).toBe(8080)
    const server = await handle.process.spawn(`node -e "require('http').createServer((q, r) => r.end('published')).listen(8080, () => console.log('up'))"`)
    const lines = server.stdout[Symbol.asyncIterator]()
    expect((await lines.next()).value).toBe('up\n')
    expect(await (await fetch(connection.url)).text()).toBe('published')
    await server.kill()
  })

  it('applies memory, CPU and process limits', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, resources: { memory: '64m', cpus: 0.5, pids: 40 } })
    const info = await sandboxes.docker.getContainer(handle.id).inspect()
    expect(info.HostConfig).toMatchObject({ Memory: 64 * 1024 * 1024, CpuPeriod: 100_000, CpuQuota: 50_000, PidsLimit: 40 })
    const limits = await handle.process.exec('cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/pids.max')
    expect(limits.stdout.split('\n').slice(0, 2)).toEqual([String(64 * 1024 * 1024), '40'])
    // 60 background sleeps cannot all start under a limit of 40 processes.
    const bomb = await handle.process.exec('i=0; while [ $i -lt 60 ]; do sleep 5 & i=$((i+1)); done 2>&1; echo started')
    expect(bomb.stdout + bomb.stderr).toMatch(/fork|Resource temporarily unavailable|can't/i)
  })

  // A job that keeps forking retakes every process slot that frees, and every `docker exec` (a kill's too) needs one:
  // kill() cannot be relied on then (docs/providers.md), destroy() always can.
  it('names the pids limit when no job can start because the sandbox is out of processes, and destroy() still frees it', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, resources: { pids: 32 } })
    // Nothing else may run in the sandbox until it is full: an exec starting meanwhile holds slots (runc's threads)
    // that free again once it has started, and then every later job fits.
    const filler = await handle.process.spawn(FILL_PID_SLOTS)
    expect(await firstLine(filler.stdout), 'pids.current/pids.max once the filler stopped').toBe('full 32/32')
    // Full: the engine refuses the exec, or starts it and the wrapper cannot fork (seen about 1 in 25).
    const error = await rejectionOf(handle.process.exec('echo alive'))
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('spawn-failed')
    expect(error.message).toMatch(/pids limit of 32/)
    expect(error.message, "the engine's or the shell's own words").toMatch(/OCI runtime exec failed|can't fork/)
    await handle.destroy()
    expect(await sandboxes.provider({ image: BUSYBOX_IMAGE }).resume({ id: handle.id }), 'the sandbox is gone').toBeNull()
  }, 120_000)

  it('refuses variable names that are not shell identifiers, in env.set, exec, spawn and create', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    for (const name of ['A B', '$(touch X)', '1ST', 'A-B', '']) {
      const set = await rejectionOf(handle.env.set({ [name]: 'x' }))
      expect(set, `env.set({ ${JSON.stringify(name)} })`).toBeInstanceOf(SandboxConfigError)
      expect((set as unknown as SandboxConfigError).field).toMatch(/^env\.set/)
      const exec = await rejectionOf(handle.process.exec('true', { env: { [name]: 'x' } }))
      expect(exec, `exec env ${JSON.stringify(name)}`).toBeInstanceOf(SandboxConfigError)
      expect((exec as unknown as SandboxConfigError).field).toMatch(/^exec\.env/)
      expect(await rejectionOf(handle.process.spawn('true', { env: { [name]: 'x' } }))).toBeInstanceOf(SandboxConfigError)
    }
    expect(() => dockerSandbox({ image: BUSYBOX_IMAGE, env: { 'A B': 'x' } })).toThrow(SandboxConfigError)
    expect(await rejectionOf(sandboxes.provider({ image: BUSYBOX_IMAGE }).create({ env: { 'A B': 'x' } }))).toBeInstanceOf(SandboxConfigError)
    expect((await handle.process.exec('ls -A')).stdout).toBe('')
    await handle.env.set({ _ok: '1', Mixed_Case9: '2' })
    expect((await handle.process.exec('printf %s "$_ok$Mixed_Case9"')).stdout).toBe('12')
  })

  it('bind-mounts a host file read-only (how a CLI binary gets into the sandbox)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsbx-mount-'))
    try {
      writeFileSync(join(dir, 'tool.sh'), '#!/bin/sh\necho tool ran\n', { mode: 0o755 })
      // As root, which owns the file: only the read-only mount can refuse the write.
      const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, user: 'root', mounts: [{ source: join(dir, 'tool.sh'), target: '/opt/tool/tool.sh', readOnly: true }] })
      expect((await handle.process.exec('/opt/tool/tool.sh')).stdout).toBe('tool ran\n')
      const write = await handle.process.exec('echo x >> /opt/tool/tool.sh')
      expect(write.stderr).toMatch(/Read-only file system/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
