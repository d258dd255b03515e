/**
 * Reading files out of the tar archives the engine's archive API returns
 * (`GET /containers/{id}/archive`), used for large reads. The archive comes
 * from inside the container, which the agent controls, so every entry is
 * checked before its bytes are used: names that climb (`..`), absolute names,
 * symlinks, hard links and anything but the one expected regular file are
 * refused. Invariant: the response stream is always consumed or destroyed
 * (an unread archive response keeps node alive).
 */
import { posix } from 'node:path'
import type { Readable } from 'node:stream'
import { extract } from 'tar-stream'
import type { Header } from 'tar-stream'
import { SandboxError, SandboxPathError } from '@tanstack/ai-sandbox'
import { operationError } from './errors.js'

/** Why an archive entry was refused; `null` when it is safe to use. */
export type ArchiveEntryRefusal = { reason: 'escape' | 'symlink-escape' | 'invalid'; detail: string } | null

/**
 * Check one entry of an archive that should contain only `expected` (a bare
 * file name) as a regular file.
 * @returns `null` for a safe entry, otherwise why it is refused.
 */
export function refuseArchiveEntry(header: Pick<Header, 'name' | 'type' | 'linkname'>, expected: string): ArchiveEntryRefusal {
  const name = header.name
  if (name.startsWith('/')) return { reason: 'escape', detail: `absolute entry name ${JSON.stringify(name)}` }
  if (name.split('/').includes('..') || posix.normalize(name).startsWith('..')) return { reason: 'escape', detail: `entry name ${JSON.stringify(name)} climbs out with ".."` }
  if (header.type === 'symlink' || header.type === 'link') {
    return { reason: 'symlink-escape', detail: `entry ${JSON.stringify(name)} is a ${header.type === 'link' ? 'hard link' : 'symlink'} to ${JSON.stringify(header.linkname ?? '')}` }
  }
  if (header.type !== 'file' && header.type !== 'contiguous-file') return { reason: 'invalid', detail: `entry ${JSON.stringify(name)} is a ${header.type ?? 'entry of unknown type'}, not a regular file` }
  if (posix.normalize(name).replace(/^\.\//, '') !== expected) return { reason: 'invalid', detail: `unexpected entry ${JSON.stringify(name)} (expected only ${JSON.stringify(expected)})` }
  return null
}

/**
 * Read the single regular file `expected` from a tar stream.
 *
 * @param archive - The engine's response; consumed to the end or destroyed.
 * @param expected - The bare file name the archive must contain.
 * @param path - The caller's path, for errors.
 * @throws SandboxPathError (`escape`, `symlink-escape`, `invalid`) for a refused entry;
 *   SandboxOperationError `fs-failed` for a broken or empty archive.
 */
export async function readFileFromArchive(archive: Readable, expected: string, path: string): Promise<Buffer> {
  const parser = extract()
  archive.on('error', (error) => parser.destroy(error))
  archive.pipe(parser as unknown as NodeJS.WritableStream)
  let found: Buffer | undefined
  try {
    for await (const entry of parser) {
      const refusal = found ? { reason: 'invalid' as const, detail: `a second entry ${JSON.stringify(entry.header.name)}` } : refuseArchiveEntry(entry.header, expected)
      if (refusal) {
        throw new SandboxPathError(refusal.reason, path, `Reading ${JSON.stringify(path)}: refused the archive the container returned: ${refusal.detail}. The file changed while it was read (a symlink swapped in?); read it again.`)
      }
      const chunks: Buffer[] = []
      for await (const chunk of entry) chunks.push(chunk as Buffer)
      found = Buffer.concat(chunks)
    }
  } catch (error) {
    if (SandboxError.isInstance(error)) throw error
    throw operationError('fs-failed', `Reading ${JSON.stringify(path)}: the archive from the engine was unreadable: ${String(error)}`, error)
  } finally {
    archive.unpipe(parser as unknown as NodeJS.WritableStream)
    archive.destroy()
    parser.destroy()
  }
  if (!found) throw operationError('fs-failed', `Reading ${JSON.stringify(path)}: the archive from the engine was empty. Read it again.`)
  return found
}
