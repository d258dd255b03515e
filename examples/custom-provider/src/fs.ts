/**
 * `handle.fs` of the directory provider. Each call (1) confines the caller's
 * path with `locate`, (2) opens the folder that holds the entry with
 * `openFolder` (no symlink followed, so a folder swapped for a link since (1)
 * is refused), and (3) acts on `at(folder, name)` only. It also owns the
 * mapping of Node errors onto the contract (`ENOENT` -> `SandboxPathError`
 * `not-found`, anything else -> `SandboxOperationError` `fs-failed`).
 * Rules beyond confinement: only regular files are read or written (a FIFO
 * would block, a device is not a file: `special-file`); a file with other hard
 * links is not read, since a link can share an inode with a file outside the
 * workspace (`hard-link`); a read loads at most `maxReadBytes` (`SandboxLimitError`
 * `file-too-large`); a write goes to a temp file renamed over the entry,
 * so it never writes through another link and readers never see half a file.
 * Invariant: no call touches a path `locate` did not return.
 */
import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import type { Dirent, Stats } from 'node:fs'
import { lstat, mkdir, open, readdir, rename, rmdir, unlink } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname } from 'node:path'
import { SandboxError, SandboxLimitError, SandboxOperationError, SandboxPathError } from '@tanstack/ai-sandbox'
import type { SandboxDirEntry, SandboxFileStat, SandboxFs } from '@tanstack/ai-sandbox'
import { at, codeOf, FOLDER_FLAGS, locate, openFolder } from './paths.js'

/** Open a file to read: never through a final symlink, never wait on a FIFO, never adopt a terminal. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY
/** Create a temp file that must not exist yet. */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW

/**
 * Build the filesystem of one sandbox.
 * @param root - The real (symlink-free) workspace directory.
 * @param provider - The provider name, for error messages.
 * @param assertAlive - Throws once the sandbox is destroyed, so a late `write` cannot re-create its folder.
 * @param maxReadBytes - Largest file `read`/`readBytes` load into memory, in bytes.
 */
export function createDirectoryFs(root: string, provider: string, assertAlive: () => Promise<void>, maxReadBytes: number): SandboxFs {
  /**
   * One fs call: liveness, confinement, then `body` with the open parent
   * folder of the entry and its name (`name` is undefined for the root).
   * Node errors become contract errors; the parent folder is always closed.
   */
  async function inParent<T>(what: string, path: string, followLast: boolean, create: boolean, body: (folder: FileHandle, name: string | undefined, relative: string) => Promise<T>): Promise<T> {
    await assertAlive()
    const { relative, host } = await locate(path, root, followLast)
    try {
      const folder = await openFolder(root, relative === '' ? root : dirname(host), create, path)
      try {
        return await body(folder, relative === '' ? undefined : basename(host), relative)
      } finally {
        await folder.close()
      }
    } catch (error) {
      if (SandboxError.isInstance(error)) throw error
      const code = codeOf(error)
      if (code === 'ENOENT' || code === 'ENOTDIR') {
        throw new SandboxPathError('not-found', path, `fs.${what}: ${JSON.stringify(path)} does not exist in the sandbox workspace.`, { cause: error })
      }
      throw new SandboxOperationError('fs-failed', provider, `fs.${what}(${JSON.stringify(path)}) failed: ${code ?? String(error)}.`, { cause: error })
    }
  }

  /** Read a regular, singly linked file through the open folder. */
  async function readEntry(folder: FileHandle, name: string | undefined, path: string): Promise<Buffer> {
    const file = await open(name === undefined ? at(folder) : at(folder, name), READ_FLAGS)
    try {
      const stats = await file.stat()
      refuseUnlessRegular('read', path, stats, provider)
      if (stats.nlink > 1) {
        throw new SandboxPathError('hard-link', path, `fs.read of ${JSON.stringify(path)} is refused: the file has ${stats.nlink} hard links, and another one may be outside the workspace. Copy it (cp) inside the sandbox and read the copy.`)
      }
      if (stats.size > maxReadBytes) {
        throw new SandboxLimitError('file-too-large', { limitBytes: maxReadBytes, option: 'directorySandbox({ maxReadBytes })', provider, path, message: `fs.read of ${JSON.stringify(path)} is refused: it has ${stats.size} bytes, more than maxReadBytes (${maxReadBytes}). Read it in parts with exec (head -c, tail -c), or raise directorySandbox({ maxReadBytes }).` })
      }
      // Read at most the size fstat reported, so a file that keeps growing cannot exceed the bound.
      const buffer = Buffer.alloc(stats.size)
      let filled = 0
      while (filled < buffer.length) {
        const { bytesRead } = await file.read(buffer, filled, buffer.length - filled, filled)
        if (bytesRead === 0) break
        filled += bytesRead
      }
      return buffer.subarray(0, filled)
    } finally {
      await file.close()
    }
  }

  const noRoot = (what: string, path: string, name: string | undefined): string => {
    if (name === undefined) throw new SandboxPathError('invalid', path, `fs.${what} of the workspace root is refused; name a file or folder inside it.`)
    return name
  }

  return {
    read: (path) => inParent('read', path, true, false, async (folder, name) => (await readEntry(folder, name, path)).toString('utf8')),
    readBytes: (path) => inParent('readBytes', path, true, false, async (folder, name) => new Uint8Array(await readEntry(folder, name, path))),

    write: (path, data) =>
      inParent('write', path, true, true, async (folder, name) => {
        const entry = noRoot('write', path, name)
        const existing = await lstat(at(folder, entry)).catch(() => undefined)
        if (existing) refuseUnlessRegular('write', path, existing, provider)
        const temp = `.directory-write-${randomUUID()}`
        const file = await open(at(folder, temp), CREATE_FLAGS, 0o666)
        try {
          if (existing) await file.chmod(existing.mode & 0o7777) // keep an executable script executable
          await file.writeFile(data)
          await file.close()
          await rename(at(folder, temp), at(folder, entry))
        } catch (error) {
          await file.close().catch(() => undefined)
          await unlink(at(folder, temp)).catch(() => undefined)
          throw error
        }
      }),

    list: (path = '.') =>
      inParent('list', path, true, false, async (folder, name, relative) => {
        // Open the listed folder itself without following a link, then read it through its descriptor.
        const listed = name === undefined ? folder : await open(at(folder, name), FOLDER_FLAGS)
        try {
          const entries = await readdir(at(listed), { withFileTypes: true })
          return entries
            .map((entry): SandboxDirEntry => ({ name: entry.name, path: relative === '' ? entry.name : `${relative}/${entry.name}`, type: typeOf(entry) }))
            .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        } finally {
          if (listed !== folder) await listed.close()
        }
      }),

    mkdir: (path) =>
      inParent('mkdir', path, true, true, async (folder, name) => {
        if (name === undefined) return // the root exists
        await mkdir(at(folder, name)).catch((error: unknown) => {
          if (codeOf(error) !== 'EEXIST') throw error
        })
        await (await open(at(folder, name), FOLDER_FLAGS)).close() // it is a real folder, not a file or a link
      }),

    remove: async (path) => {
      try {
        await inParent('remove', path, false, false, (folder, name) => removeEntry(folder, noRoot('remove', path, name)))
      } catch (error) {
        if (SandboxPathError.isInstance(error) && error.reason === 'not-found') return // nothing there: done
        throw error
      }
    },

    rename: (from, to) =>
      inParent('rename', from, false, false, async (source, name) => {
        const entry = noRoot('rename', from, name)
        await lstat(at(source, entry)) // a missing source is reported against `from`
        await inParent('rename', to, false, true, (target, targetName) => rename(at(source, entry), at(target, noRoot('rename', to, targetName))))
      }),

    exists: async (path) => {
      try {
        await inParent('exists', path, false, false, (folder, name) => lstat(name === undefined ? at(folder) : at(folder, name)))
        return true // a dangling symlink exists as a link
      } catch (error) {
        if (SandboxPathError.isInstance(error) && error.reason === 'not-found') return false
        throw error
      }
    },

    lstat: (path) =>
      inParent('lstat', path, false, false, async (folder, name): Promise<SandboxFileStat> => {
        const stats = await lstat(name === undefined ? at(folder) : at(folder, name))
        return { type: typeOf(stats), size: stats.size, mode: stats.mode & 0o7777, mtimeMs: stats.mtimeMs }
      }),
    // No `watch`: it is optional, and core's file events then poll the workspace with `find` through exec.
  }
}

/**
 * Remove `name` from `folder` without following a link at any depth: files
 * and links are unlinked; a folder is opened (no-follow), emptied through its
 * own descriptor, then removed. A missing entry is fine.
 */
async function removeEntry(folder: FileHandle, name: string): Promise<void> {
  const stats = await lstat(at(folder, name)).catch((error: unknown) => {
    if (codeOf(error) === 'ENOENT') return undefined
    throw error
  })
  if (!stats) return
  if (!stats.isDirectory()) return unlink(at(folder, name))
  const inner = await open(at(folder, name), FOLDER_FLAGS)
  try {
    for (const child of await readdir(at(inner))) await removeEntry(inner, child)
  } finally {
    await inner.close()
  }
  await rmdir(at(folder, name))
}

function refuseUnlessRegular(what: string, path: string, stats: Stats, provider: string): void {
  if (stats.isFile()) return
  if (stats.isDirectory()) throw new SandboxOperationError('fs-failed', provider, `fs.${what}(${JSON.stringify(path)}) failed: it is a directory.`)
  throw new SandboxPathError('special-file', path, `fs.${what} of ${JSON.stringify(path)} is refused: it is a FIFO, socket or device, not a regular file.`)
}

function typeOf(entry: Dirent | Stats): SandboxDirEntry['type'] {
  if (entry.isSymbolicLink()) return 'symlink'
  if (entry.isDirectory()) return 'directory'
  if (entry.isFile()) return 'file'
  return 'other'
}
