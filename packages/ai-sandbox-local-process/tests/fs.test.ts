// fs of the local-process provider: round trips, listing, and path
// confinement (lexical and through symlinks anywhere in the path).
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SandboxOperationError, SandboxPathError } from '@tanstack/ai-sandbox'
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
})
