// The archive checks behind large reads, on archives built here: entries that
// climb out, absolute names, symlinks, hard links, directories, a second
// entry and a wrong name are refused; the one expected file is returned.
// Pure: no engine needed.
import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { pack } from 'tar-stream'
import type { Header } from 'tar-stream'
import { SandboxPathError } from '@tanstack/ai-sandbox'
import { readFileFromArchive, refuseArchiveEntry } from '../src/tar.js'

async function archive(entries: { header: Partial<Header> & { name: string }; body?: string }[]): Promise<Readable> {
  const p = pack()
  for (const { header, body } of entries) {
    await new Promise<void>((resolve, reject) => p.entry(header, body ?? '', (error) => (error ? reject(error) : resolve())))
  }
  p.finalize()
  const chunks: Buffer[] = []
  for await (const chunk of p) chunks.push(chunk as Buffer)
  return Readable.from([Buffer.concat(chunks)])
}

describe('refuseArchiveEntry', () => {
  it.each([
    [{ name: '../evil', type: 'file' as const }, 'escape'],
    [{ name: 'a/../../evil', type: 'file' as const }, 'escape'],
    [{ name: '/etc/passwd', type: 'file' as const }, 'escape'],
    [{ name: 'f.txt', type: 'symlink' as const, linkname: '/etc/passwd' }, 'symlink-escape'],
    [{ name: 'f.txt', type: 'link' as const, linkname: '../x' }, 'symlink-escape'],
    [{ name: 'f.txt', type: 'directory' as const }, 'invalid'],
    [{ name: 'other.txt', type: 'file' as const }, 'invalid'],
  ])('refuses %j (%s)', (header, reason) => {
    expect(refuseArchiveEntry({ linkname: '', ...header }, 'f.txt')?.reason).toBe(reason)
  })

  it('accepts the expected regular file, also as ./name', () => {
    expect(refuseArchiveEntry({ name: 'f.txt', type: 'file', linkname: '' }, 'f.txt')).toBeNull()
    expect(refuseArchiveEntry({ name: './f.txt', type: 'file', linkname: '' }, 'f.txt')).toBeNull()
  })
})

describe('readFileFromArchive', () => {
  it('returns the bytes of the single expected file and consumes the stream', async () => {
    const source = await archive([{ header: { name: 'f.txt' }, body: 'hello ✓' }])
    expect((await readFileFromArchive(source, 'f.txt', 'f.txt')).toString()).toBe('hello ✓')
    expect(source.destroyed).toBe(true)
  })

  it('refuses a symlink entry and destroys the stream', async () => {
    const source = await archive([{ header: { name: 'f.txt', type: 'symlink', linkname: '/etc/passwd' } }])
    const error = await readFileFromArchive(source, 'f.txt', 'f.txt').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SandboxPathError)
    expect((error as SandboxPathError).reason).toBe('symlink-escape')
    expect(source.destroyed).toBe(true)
  })

  it('refuses a second entry after the expected one', async () => {
    const source = await archive([{ header: { name: 'f.txt' }, body: 'a' }, { header: { name: '../../root/.ssh/authorized_keys' }, body: 'b' }])
    const error = await readFileFromArchive(source, 'f.txt', 'f.txt').catch((e: unknown) => e)
    expect((error as SandboxPathError).reason).toBe('invalid')
  })

  it('refuses an entry that climbs out', async () => {
    const source = await archive([{ header: { name: '../f.txt' }, body: 'a' }])
    const error = await readFileFromArchive(source, 'f.txt', 'f.txt').catch((e: unknown) => e)
    expect((error as SandboxPathError).reason).toBe('escape')
  })

  it('reports an empty or broken archive as fs-failed', async () => {
    const empty = await archive([])
    expect(((await readFileFromArchive(empty, 'f.txt', 'f.txt').catch((e: unknown) => e)) as { reason: string }).reason).toBe('fs-failed')
    const broken = Readable.from([Buffer.from('not a tar archive at all'.repeat(40))])
    expect(((await readFileFromArchive(broken, 'f.txt', 'f.txt').catch((e: unknown) => e)) as { reason: string }).reason).toBe('fs-failed')
  })
})
