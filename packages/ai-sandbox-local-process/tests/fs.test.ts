// fs of the local-process provider: round trips, listing, path confinement
// (lexical and through symlinks anywhere in the path), special files, hard
// links and the read size bound.
import { execFileSync } from 'node:child_process'
import { pbkdf2, randomBytes } from 'node:crypto'
import { lookup } from 'node:dns/promises'
import { existsSync } from 'node:fs'
import { chmod, link, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxConfigError, SandboxLimitError, SandboxOperationError, SandboxPathError } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '../src/index.js'
import { rejectionOf, useTempRoot } from './helpers/temp-root.js'

const temp = useTempRoot()
let outside = ''

beforeAll(async () => {
  // A directory next to the sandboxes, outside every workspace.
  outside = await mkdtemp(join(temp.root, '..', 'lp-outside-'))
  await writeFile(join(outside, 'secret.txt'), 'top secret')
})
afterAll(async () => {
  await rm(outside, { recursive: true, force: true })
})

async function expectPathError(promise: Promise<unknown>, reason: string) {
  const error = await rejectionOf(promise)
  expect(SandboxPathError.isInstance(error)).toBe(true)
  expect(error).toBeInstanceOf(SandboxPathError)
  expect(error.reason).toBe(reason)
  return error as SandboxPathError
}

describe('fs', () => {
  it('writes, reads, lists, renames and removes inside the workspace', async () => {
    const handle = await temp.create()
    await handle.fs.write('src/deep/a.ts', 'export const a = 1\n')
    await handle.fs.write('/workspace/b.txt', 'b')
    await handle.fs.write(join(handle.workspaceRoot, 'c.txt'), 'c')
    await handle.fs.mkdir('empty/nested')
    await handle.fs.mkdir('empty/nested')
    expect(await handle.fs.read('src/deep/a.ts')).toBe('export const a = 1\n')
    expect(await readFile(join(handle.workspaceRoot, 'b.txt'), 'utf8')).toBe('b')

    expect(await handle.fs.list()).toEqual([
      { name: 'b.txt', path: 'b.txt', type: 'file' },
      { name: 'c.txt', path: 'c.txt', type: 'file' },
      { name: 'empty', path: 'empty', type: 'directory' },
      { name: 'src', path: 'src', type: 'directory' },
    ])
    expect(await handle.fs.list('/workspace/src')).toEqual([{ name: 'deep', path: 'src/deep', type: 'directory' }])

    await handle.fs.rename('b.txt', 'c.txt')
    expect(await handle.fs.read('c.txt')).toBe('b')
    expect(await handle.fs.exists('b.txt')).toBe(false)
    await handle.fs.rename('c.txt', 'moved/into/new/dir.txt')
    expect(await handle.fs.read('moved/into/new/dir.txt')).toBe('b')

    await handle.fs.remove('src')
    await handle.fs.remove('src')
    await handle.fs.remove('never/existed')
    expect(await handle.fs.exists('src')).toBe(false)
    expect(await handle.fs.exists('empty/nested')).toBe(true)

    const stat = await handle.fs.lstat!('moved/into/new/dir.txt')
    expect(stat).toMatchObject({ type: 'file', size: 1 })
    expect(stat.mode & 0o600).toBe(0o600)
    await symlink('moved', join(handle.workspaceRoot, 'link'))
    expect((await handle.fs.lstat!('link')).type).toBe('symlink')
    expect((await handle.fs.list()).find((entry) => entry.name === 'link')?.type).toBe('symlink')
  })

  it('reports missing paths as SandboxPathError not-found', async () => {
    const handle = await temp.create()
    const error = await expectPathError(handle.fs.read('nope.txt'), 'not-found')
    expect(error.path).toBe('nope.txt')
    expect(error.message).toContain('nope.txt')
    await expectPathError(handle.fs.readBytes('a/b/c'), 'not-found')
    await expectPathError(handle.fs.list('missing-dir'), 'not-found')
    await expectPathError(handle.fs.rename('missing', 'other'), 'not-found')
    await expectPathError(handle.fs.lstat!('missing'), 'not-found')
  })

  it('maps other failures to SandboxOperationError fs-failed', async () => {
    const handle = await temp.create()
    await handle.fs.mkdir('dir')
    const error = await rejectionOf(handle.fs.read('dir'))
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect(error.reason).toBe('fs-failed')
  })

  it('round-trips every byte value, and a 50 MB file', async () => {
    const handle = await temp.create()
    const bytes = new Uint8Array(512)
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256
    await handle.fs.write('bin/all-bytes.bin', bytes)
    const back = await handle.fs.readBytes('bin/all-bytes.bin')
    expect(back).toBeInstanceOf(Uint8Array)
    expect(Buffer.from(back).equals(Buffer.from(bytes))).toBe(true)

    const big = randomBytes(50 * 1024 * 1024)
    await handle.fs.write('big.bin', big)
    const bigBack = await handle.fs.readBytes('big.bin')
    expect(bigBack.byteLength).toBe(big.byteLength)
    expect(Buffer.from(bigBack.buffer, bigBack.byteOffset, bigBack.byteLength).equals(big)).toBe(true)
  })

  it('refuses lexical escapes with reason escape', async () => {
    const handle = await temp.create()
    for (const path of ['..', '../x', 'a/../../x', '/workspace/../etc/passwd', '/etc/passwd', join(outside, 'secret.txt')]) {
      const error = await expectPathError(handle.fs.read(path), 'escape')
      expect(error.path).toBe(path)
      expect(error.message).toContain('outside the sandbox workspace')
    }
    await expectPathError(handle.fs.write('../escaped.txt', 'x'), 'escape')
    expect(existsSync(join(handle.workspaceRoot, '..', 'escaped.txt'))).toBe(false)
    await expectPathError(handle.fs.remove('..'), 'escape')
    await expectPathError(handle.fs.rename('a', '../b'), 'escape')
    await expectPathError(handle.fs.exists('/tmp'), 'escape')
    await expectPathError(handle.fs.read(''), 'invalid')
    await expectPathError(handle.fs.remove('/workspace'), 'invalid')
  })

  it('refuses a symlinked intermediate directory that leads outside', async () => {
    const handle = await temp.create()
    await symlink(outside, join(handle.workspaceRoot, 'out'))
    const error = await expectPathError(handle.fs.read('out/secret.txt'), 'symlink-escape')
    expect(error.message).toContain('symlink')
    await expectPathError(handle.fs.write('out/planted.txt', 'x'), 'symlink-escape')
    await expectPathError(handle.fs.write('out/new/dir/planted.txt', 'x'), 'symlink-escape')
    await expectPathError(handle.fs.mkdir('out/newdir'), 'symlink-escape')
    await expectPathError(handle.fs.list('out'), 'symlink-escape')
    await expectPathError(handle.fs.remove('out/secret.txt'), 'symlink-escape')
    await expectPathError(handle.fs.rename('out/secret.txt', 'stolen.txt'), 'symlink-escape')
    await expectPathError(handle.process.exec('pwd', { cwd: 'out' }), 'symlink-escape')
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false)
    expect(existsSync(join(outside, 'new'))).toBe(false)
    expect(existsSync(join(outside, 'newdir'))).toBe(false)
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('top secret')

    // A relative link deeper in the tree that climbs out is caught the same way.
    await mkdir(join(handle.workspaceRoot, 'a/b'), { recursive: true })
    await symlink('../../..', join(handle.workspaceRoot, 'a/b/up'))
    await expectPathError(handle.fs.read('a/b/up/secret.txt'), 'symlink-escape')
  })

  it('refuses a final symlink that leads outside, for reads and writes', async () => {
    const handle = await temp.create()
    await symlink(join(outside, 'secret.txt'), join(handle.workspaceRoot, 'link.txt'))
    await symlink(join(outside, 'not-yet.txt'), join(handle.workspaceRoot, 'dangling.txt'))
    await expectPathError(handle.fs.read('link.txt'), 'symlink-escape')
    await expectPathError(handle.fs.readBytes('link.txt'), 'symlink-escape')
    await expectPathError(handle.fs.write('link.txt', 'overwritten'), 'symlink-escape')
    await expectPathError(handle.fs.write('dangling.txt', 'created'), 'symlink-escape')
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('top secret')
    expect(existsSync(join(outside, 'not-yet.txt'))).toBe(false)

    // Describing or removing the link itself is fine and never touches the target.
    expect(await handle.fs.exists('dangling.txt')).toBe(true)
    expect((await handle.fs.lstat!('link.txt')).type).toBe('symlink')
    await handle.fs.remove('link.txt')
    expect(existsSync(join(handle.workspaceRoot, 'link.txt'))).toBe(false)
    expect(await readFile(join(outside, 'secret.txt'), 'utf8')).toBe('top secret')
  })

  it('follows symlinks that stay inside the workspace', async () => {
    const handle = await temp.create()
    await handle.fs.write('real/file.txt', 'inside')
    await symlink('real', join(handle.workspaceRoot, 'alias'))
    await symlink(join(handle.workspaceRoot, 'real/file.txt'), join(handle.workspaceRoot, 'abs-link.txt'))
    await symlink('real/later.txt', join(handle.workspaceRoot, 'later-link.txt'))
    expect(await handle.fs.read('alias/file.txt')).toBe('inside')
    expect(await handle.fs.read('abs-link.txt')).toBe('inside')
    await handle.fs.write('alias/other.txt', 'via alias')
    expect(await handle.fs.read('real/other.txt')).toBe('via alias')
    await handle.fs.write('later-link.txt', 'through a dangling inside link')
    expect(await handle.fs.read('real/later.txt')).toBe('through a dangling inside link')
    expect(await readlink(join(handle.workspaceRoot, 'later-link.txt'))).toBe('real/later.txt')
    expect((await handle.fs.list('alias')).map((entry) => entry.path)).toEqual(['alias/file.txt', 'alias/later.txt', 'alias/other.txt'])
  })

  it('refuses symlink loops as invalid', async () => {
    const handle = await temp.create()
    await symlink('loop-b', join(handle.workspaceRoot, 'loop-a'))
    await symlink('loop-a', join(handle.workspaceRoot, 'loop-b'))
    await expectPathError(handle.fs.read('loop-a'), 'invalid')
  })

  it('refuses FIFOs at once, and four pending FIFO reads leave the host process free', async () => {
    const handle = await temp.create()
    for (let i = 0; i < 4; i++) execFileSync('mkfifo', [join(handle.workspaceRoot, `pipe${i}`)])
    // Four blocking opens would fill libuv's default thread pool (4 threads) and stall every fs, dns and crypto call.
    const reads = [0, 1, 2, 3].map((i) => rejectionOf(i % 2 === 0 ? handle.fs.read(`pipe${i}`) : handle.fs.readBytes(`pipe${i}`)))
    const unrelated = Promise.all([
      readFile(join(handle.workspaceRoot, '..', 'sandbox.json'), 'utf8'),
      promisify(pbkdf2)('secret', 'salt', 1000, 32, 'sha256'),
      lookup('localhost'),
      handle.fs.write('still-works.txt', 'yes'),
    ])
    const settled = await Promise.race([
      Promise.all([unrelated, Promise.all(reads)]).then(() => 'settled'),
      new Promise((resolve) => setTimeout(() => resolve('stalled'), 10_000)),
    ])
    expect(settled, 'unrelated fs, crypto and dns calls finish while FIFO reads are pending').toBe('settled')
    for (const error of await Promise.all(reads)) {
      expect(SandboxPathError.isInstance(error)).toBe(true)
      expect(error.reason).toBe('special-file')
    }
    await expectPathError(handle.fs.write('pipe0', 'x'), 'special-file')
    expect((await stat(join(handle.workspaceRoot, 'pipe0'))).isFIFO()).toBe(true)
    expect(await handle.fs.read('still-works.txt')).toBe('yes')
  })

  it('never reads a hard link to a host file, and a write replaces it instead of writing through', async () => {
    const handle = await temp.create()
    const hostFile = join(outside, 'hard-target.txt')
    await writeFile(hostFile, 'host content')
    await chmod(hostFile, 0o640)
    await link(hostFile, join(handle.workspaceRoot, 'linked.txt'))
    const error = await expectPathError(handle.fs.read('linked.txt'), 'hard-link')
    expect(error.message).toMatch(/hard links/)
    await expectPathError(handle.fs.readBytes('linked.txt'), 'hard-link')
    await handle.fs.write('linked.txt', 'sandbox content')
    expect(await readFile(hostFile, 'utf8')).toBe('host content')
    expect((await stat(hostFile)).nlink).toBe(1)
    expect(await handle.fs.read('linked.txt')).toBe('sandbox content')
    expect((await stat(join(handle.workspaceRoot, 'linked.txt'))).mode & 0o777, 'the replacement keeps the mode').toBe(0o640)
    // An ordinary file is written in place: same inode, same mode.
    await handle.fs.write('plain.sh', '#!/bin/sh\n')
    await chmod(join(handle.workspaceRoot, 'plain.sh'), 0o755)
    const inode = (await stat(join(handle.workspaceRoot, 'plain.sh'))).ino
    await handle.fs.write('plain.sh', '#!/bin/sh\necho hi\n')
    const after = await stat(join(handle.workspaceRoot, 'plain.sh'))
    expect([after.ino, after.mode & 0o777]).toEqual([inode, 0o755])
    expect(execFileSync('ls', ['-A', handle.workspaceRoot], { encoding: 'utf8' }).split('\n').filter((name) => name.startsWith('.tanstack'))).toEqual([])
  })

  it('refuses a character device for read and write', async () => {
    const handle = await temp.create()
    try {
      execFileSync('mknod', [join(handle.workspaceRoot, 'null'), 'c', '1', '3'], { stdio: 'ignore' })
    } catch {
      return expect.soft(process.getuid?.(), 'mknod needs root; only root runs this part').not.toBe(0)
    }
    await expectPathError(handle.fs.read('null'), 'special-file')
    await expectPathError(handle.fs.write('null', 'x'), 'special-file')
  })

  it('bounds reads by maxReadBytes with SandboxLimitError file-too-large (default 64 MiB)', async () => {
    const handle = await temp.create({ maxReadBytes: 1024 })
    await handle.fs.write('ok.bin', new Uint8Array(1024))
    expect((await handle.fs.readBytes('ok.bin')).byteLength).toBe(1024)
    await handle.fs.write('big.bin', new Uint8Array(1025))
    const error = await rejectionOf(handle.fs.readBytes('big.bin'))
    expect(SandboxLimitError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ reason: 'file-too-large', limitBytes: 1024, option: 'localProcessSandbox({ maxReadBytes })', provider: 'local-process', path: 'big.bin' })
    expect(error.message).toMatch(/maxReadBytes/)
    expect((await rejectionOf(handle.fs.read('big.bin'))).reason).toBe('file-too-large')

    // The default bound: a 600 MiB sparse file is refused before anything is read.
    const plain = await temp.create()
    execFileSync('truncate', ['-s', '600M', join(plain.workspaceRoot, 'sparse.bin')])
    const sparse = await rejectionOf(plain.fs.readBytes('sparse.bin'))
    expect(sparse).toMatchObject({ reason: 'file-too-large', limitBytes: 64 * 1024 * 1024 })

    const config = (() => {
      try {
        localProcessSandbox({ maxReadBytes: 0 })
      } catch (thrown) {
        return thrown
      }
    })()
    expect(SandboxConfigError.isInstance(config)).toBe(true)
    expect((config as SandboxConfigError).field).toBe('localProcessSandbox.maxReadBytes')
  })

  it('keeps working when the workspace directory itself is swapped for a symlink', async () => {
    const handle = await temp.create()
    await handle.fs.write('mine.txt', 'mine')
    const workspace = handle.workspaceRoot
    execFileSync('sh', ['-c', 'mv "$1" "$1.real" && ln -s "$2" "$1"', 'sh', workspace, outside])
    try {
      await expectPathError(handle.fs.read('secret.txt'), 'symlink-escape')
      await expectPathError(handle.fs.write('planted.txt', 'x'), 'symlink-escape')
      expect(existsSync(join(outside, 'planted.txt'))).toBe(false)
    } finally {
      execFileSync('sh', ['-c', 'rm "$1" && mv "$1.real" "$1"', 'sh', workspace])
    }
    expect(await handle.fs.read('mine.txt')).toBe('mine')
  })
})
