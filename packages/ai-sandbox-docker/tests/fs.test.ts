// Engine specifics of handle.fs: names with spaces, quotes and newlines in
// every method (checked against what ls sees inside the container), 50 MB
// binary files, a non-root sandbox user's ownership and permission errors,
// a symlink race that must never hand over root-only files, typed errors
// for wrong types, the read size bound, mode-keeping writes, link hops, and
// git.clone({ dir }) refusing every symlink shape on the way.
import { createHash, randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxError, SandboxLimitError, SandboxOperationError, SandboxPathError } from '@tanstack/ai-sandbox'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { rejectionOf, useDockerSandboxes } from './helpers/sandboxes.js'

const ODD_NAMES = ['with space.txt', `it's "quoted".txt`, 'new\nline.txt', ' lead and trail ', '$(touch pwned)`x`;&|*?.txt', 'ünï ✓.txt', '-dash-first']

const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

describeWithDocker('docker fs', await dockerMissing([DEBIAN_IMAGE, BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const sandboxes = useDockerSandboxes('fs')

  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    describe(image, () => {
      it('handles file names with spaces, quotes, newlines and shell syntax in every method', async () => {
        const handle = await sandboxes.create({ image })
        for (const name of ODD_NAMES) {
          const dir = `dir ${name}`
          await handle.fs.write(`${dir}/${name}`, `content of ${name}`)
          expect(await handle.fs.read(`${dir}/${name}`)).toBe(`content of ${name}`)
          expect(await handle.fs.list(dir)).toEqual([{ name, path: `${dir}/${name}`, type: 'file' }])
          expect((await handle.fs.lstat!(`${dir}/${name}`)).size).toBe(Buffer.byteLength(`content of ${name}`))
          await handle.fs.rename(`${dir}/${name}`, `${dir}/moved ${name}`)
          expect(await handle.fs.exists(`${dir}/${name}`)).toBe(false)
          expect(await handle.fs.exists(`${dir}/moved ${name}`)).toBe(true)
          // The same bytes as the container sees them (find prints NUL-separated names).
          const seen = await handle.process.exec('find . -type f -print0', { cwd: dir })
          expect(seen.stdout).toBe(`./moved ${name}\0`)
          const inside = await handle.process.exec('cat "$F"', { cwd: dir, env: { F: `moved ${name}` } })
          expect(inside.stdout).toBe(`content of ${name}`)
          await handle.fs.remove(dir)
          expect(await handle.fs.exists(dir)).toBe(false)
        }
        expect((await handle.process.exec('ls -A; ls -A / | grep -c pwned || true')).stdout).toBe('0\n')
      })

      it('round-trips a 50 MB binary file and a 1 MB one (both streamed through exec)', async () => {
        const handle = await sandboxes.create({ image })
        const big = randomBytes(50 * 1024 * 1024)
        await handle.fs.write('bin/big.bin', big)
        const back = await handle.fs.readBytes('bin/big.bin')
        expect(back.length).toBe(big.length)
        expect(sha(back)).toBe(sha(big))
        expect((await handle.process.exec('sha256sum bin/big.bin')).stdout.split(' ')[0]).toBe(sha(big))
        const small = randomBytes(1024 * 1024)
        await handle.fs.write('bin/small.bin', small)
        expect(sha(await handle.fs.readBytes('bin/small.bin'))).toBe(sha(small))
      })
    })
  }

  it('reads through an inner symlink', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    await handle.fs.write('a.txt', 'through exec')
    expect(await handle.fs.read('a.txt')).toBe('through exec')
    await handle.process.exec('ln -s a.txt link.txt')
    expect(await handle.fs.read('link.txt')).toBe('through exec')
  })

  it('gives typed errors for directories read as files and files listed as directories', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    await handle.fs.write('d/f.txt', 'x')
    const read = await rejectionOf(handle.fs.read('d'))
    expect(read).toBeInstanceOf(SandboxOperationError)
    expect(read.message).toMatch(/is a directory/)
    const list = await rejectionOf(handle.fs.list('d/f.txt'))
    expect(list.message).toMatch(/not a directory/)
    const missing = await rejectionOf(handle.fs.list('nope'))
    expect(missing).toBeInstanceOf(SandboxPathError)
    expect(missing.reason).toBe('not-found')
    const root = await rejectionOf(handle.fs.remove('/workspace'))
    expect(root.reason).toBe('invalid')
    expect((await handle.fs.lstat!('.')).type).toBe('directory')
    expect(await handle.fs.exists('/workspace')).toBe(true)
  })

  it('hands a non-root user only bytes they could read while a directory on the path is swapped for a symlink to /etc', async () => {
    // Reads used to go through the engine's archive API, which runs as root: this race leaked /etc/shadow.
    const handle = await sandboxes.create({ image: DEBIAN_IMAGE, user: '1000:1000' })
    expect((await handle.process.exec('cat /etc/shadow')).exitCode, 'the sandbox user cannot read /etc/shadow itself').not.toBe(0)
    await handle.process.exec('mkdir A && head -c 4096 /dev/urandom > A/shadow && ln -s /etc L')
    const mine = (await handle.process.exec('sha256sum A/shadow')).stdout.split(' ')[0]
    const swapper = await handle.process.spawn('while :; do mv -T A d; mv -T d A; mv -T L d; mv -T d L; done')
    const outcomes = { read: 0, refused: 0 }
    const leaked: string[] = []
    try {
      const deadline = Date.now() + 20_000
      for (let i = 0; i < 150 && Date.now() < deadline; i++) {
        try {
          const bytes = await handle.fs.readBytes('d/shadow')
          outcomes.read++
          if (sha(bytes) !== mine) leaked.push(Buffer.from(bytes).toString('utf8').slice(0, 40))
        } catch (error) {
          // Not found (d was mid-swap), a symlink escape, or permission denied: typed refusals are fine.
          expect(SandboxError.isInstance(error), String(error)).toBe(true)
          outcomes.refused++
        }
      }
    } finally {
      await swapper.kill('SIGKILL')
    }
    expect(leaked, 'no read returned anything but the workspace file').toEqual([])
    expect(outcomes.read + outcomes.refused, 'the race ran').toBeGreaterThan(20)
  })

  it('runs as a non-root user: the workspace and new files are theirs, other places are not writable', async () => {
    const handle = await sandboxes.create({ image: DEBIAN_IMAGE, user: '1000:1000' })
    expect((await handle.process.exec('id -u; id -g')).stdout).toBe('1000\n1000\n')
    await handle.fs.write('mine/file.txt', 'x')
    const owners = await handle.process.exec('stat -c "%u:%g %n" . mine mine/file.txt')
    expect(owners.stdout).toBe('1000:1000 .\n1000:1000 mine\n1000:1000 mine/file.txt\n')
    const denied = await handle.process.exec('touch /etc/tsbx-denied')
    expect(denied.exitCode).not.toBe(0)
    await handle.process.exec('ln -s /etc etc-link')
    const escape = await rejectionOf(handle.fs.write('etc-link/x', 'no'))
    expect(escape.reason).toBe('symlink-escape')
    // Files the sandbox user may not write stay protected: fs runs as that user, not as root.
    // (With every capability dropped, not even a root exec can make a root-owned folder in the user's workspace.)
    await handle.process.exec('mkdir rootonly && chmod 555 rootonly')
    const blocked = await rejectionOf(handle.fs.write('rootonly/x.txt', 'no'))
    expect(blocked).toBeInstanceOf(SandboxOperationError)
    expect(blocked.reason).toBe('fs-failed')
    expect(blocked.message).toMatch(/Permission denied|permission denied/)
  })

  it('bounds reads by maxReadBytes with SandboxLimitError file-too-large', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE, maxReadBytes: 1024 })
    await handle.fs.write('ok.bin', new Uint8Array(1024))
    expect((await handle.fs.readBytes('ok.bin')).byteLength).toBe(1024)
    await handle.fs.write('big.bin', new Uint8Array(1025))
    const error = await rejectionOf(handle.fs.readBytes('big.bin'))
    expect(SandboxLimitError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ reason: 'file-too-large', limitBytes: 1024, option: 'dockerSandbox({ maxReadBytes })', provider: 'docker', path: 'big.bin' })
    expect(error.message).toMatch(/1025 bytes/)
    expect((await rejectionOf(handle.fs.read('big.bin'))).reason).toBe('file-too-large')
    const config = await rejectionOf((async () => dockerSandbox({ image: BUSYBOX_IMAGE, maxReadBytes: -1 }))())
    expect(SandboxConfigError.isInstance(config)).toBe(true)
    expect(config.field).toBe('dockerSandbox.maxReadBytes')
  })

  it('writes keep an existing file mode, leave no temp file, and follow inside link chains hop by hop', async () => {
    const handle = await sandboxes.create({ image: BUSYBOX_IMAGE })
    await handle.fs.write('run.sh', '#!/bin/sh\n')
    await handle.process.exec('chmod 751 run.sh && mkdir -p real/deep && ln -s real/deep hop1 && ln -s hop1 hop2 && ln -s ../../run.sh real/deep/up && ln -s loop-b loop-a && ln -s loop-a loop-b')
    await handle.fs.write('run.sh', '#!/bin/sh\necho hi\n')
    expect((await handle.process.exec('stat -c %a run.sh && ls -A')).stdout).toBe('751\nhop1\nhop2\nloop-a\nloop-b\nreal\nrun.sh\n')
    await handle.fs.write('hop2/file.txt', 'through two links')
    expect(await handle.fs.read('real/deep/file.txt')).toBe('through two links')
    expect(await handle.fs.read('hop2/up')).toBe('#!/bin/sh\necho hi\n')
    expect((await rejectionOf(handle.fs.read('loop-a'))).reason).toBe('invalid')
    // A final link to a directory is a directory, for read and write alike.
    expect((await rejectionOf(handle.fs.read('hop2'))).message).toMatch(/is a directory/)
  })

  it('git.clone({ dir }) refuses every symlink shape on the way and writes nothing outside', async () => {
    const handle = await sandboxes.create({ image: DEBIAN_IMAGE })
    await handle.process.exec(
      'git init -q /tmp/seed && git -C /tmp/seed -c user.name=t -c user.email=t@x.invalid commit -q --allow-empty -m seed && ' +
        'mkdir -p /tmp/outside/self-target sub real && ln -s /tmp/outside/self-target self && ln -s ../tmp/outside parent && ln -s /tmp/outside abs && ' +
        'ln -s ../../tmp sub/up && ln -s chain-2 chain-1 && ln -s /tmp/outside chain-2',
    )
    const outsideTree = async () => (await handle.process.exec('find /tmp/outside | sort')).stdout
    const before = await outsideTree()
    for (const dir of ['self', 'parent/repo', 'abs/deep/repo', 'sub/up/outside/repo', 'chain-1/repo']) {
      const error = await rejectionOf(handle.git.clone({ url: 'file:///tmp/seed', dir }))
      expect(SandboxPathError.isInstance(error), `${dir}: ${String(error)}`).toBe(true)
      expect(error).toMatchObject({ reason: 'symlink-escape', path: dir })
    }
    expect(await outsideTree(), 'nothing was written outside the workspace').toBe(before)
    await handle.git.clone({ url: 'file:///tmp/seed', dir: 'plain/repo' })
    expect((await handle.process.exec('git -C plain/repo log --format=%s')).stdout).toBe('seed\n')
  })
})
