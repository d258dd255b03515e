/**
 * `handle.fs` of the local-process provider: host filesystem calls on paths
 * confined by {@link withConfinedPath}, the error mapping, and the rules for
 * what the host will touch (no-follow dirs, regular files only, hard links).
 * Invariant: no caller string reaches `node:fs`; the root is never removed.
 * One file: every operation shares the same confinement and error rules.
 * Design notes: docs/design/local-process.md
 */
import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import type { Dirent, Stats } from 'node:fs'
import { lstat, open, readdir, rename, rmdir, unlink } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { join, posix } from 'node:path'
import { SandboxError, SandboxLimitError, SandboxPathError } from '@tanstack/ai-sandbox'
import type { SandboxDirEntry, SandboxFileStat, SandboxFs } from '@tanstack/ai-sandbox'
import { ConfinedDir, PathChangedError, confinePath, openConfinedDir, splitHost, withConfinedPath } from './confine.js'
import type { ConfinedPath } from './confine.js'
import { PROVIDER_NAME, errnoCode, fsError } from './errors.js'
import type { SandboxState } from './sandbox-state.js'
import { watchWorkspace } from './watch.js'

/** Open an existing file for reading: never follow a final link, never wait on a FIFO, never adopt a tty. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY
/** Open an existing file for writing in place (no truncation until it is checked). */
const WRITE_FLAGS = constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY
/** Create a file that must not exist yet (a link planted under its name fails with EEXIST). */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | constants.O_NONBLOCK
/** Entries removed at once per directory level by `remove`. */
const REMOVE_CONCURRENCY = 16

/** Build the `fs` member of a handle over one sandbox's state. */
export function createLocalFs(state: SandboxState): SandboxFs {
  const root = state.workspaceRoot

  /** Run one fs operation: liveness check, confinement (retried when the path changes), error mapping. */
  async function op<T>(method: string, path: string, followLast: boolean, body: (target: ConfinedPath) => Promise<T>): Promise<T> {
    state.assertLive(`fs.${method}`)
    try {
      return await withConfinedPath(path, root, followLast, body)
    } catch (error) {
      throw SandboxError.isInstance(error) ? error : fsError(method, path, error)
    }
  }

  /** Read a regular, singly linked file of at most `maxReadBytes` through a descriptor opened without following links. */
  const readRegular = (method: 'read' | 'readBytes', path: string) =>
    op(method, path, true, async ({ host }) => {
      const { parent, name } = splitHost(root, host)
      if (name === undefined) throw isADirectory()
      return inDir(parent, false, async (dir) => {
        refuseUnlessRegular(method, path, await lstat(dir.at(name)))
        const file = await openFile(dir.at(name), READ_FLAGS, method, path)
        try {
          const info = await file.stat()
          refuseUnlessRegular(method, path, info)
          if (info.nlink > 1) throw hardLinkError(method, path, info.nlink)
          if (info.size > state.maxReadBytes) throw tooLargeError(method, path, state.maxReadBytes, info.size)
          return await readBounded(file, info.size, state.maxReadBytes, () => tooLargeError(method, path, state.maxReadBytes))
        } finally {
          await file.close()
        }
      })
    })

  /** Open the confined directory `parent` for the duration of `body`. */
  async function inDir<T>(parent: string, create: boolean, body: (dir: ConfinedDir) => Promise<T>): Promise<T> {
    const dir = await openConfinedDir(root, parent, create)
    try {
      return await body(dir)
    } finally {
      await dir.close()
    }
  }

  return {
    read: async (path) => (await readRegular('read', path)).toString('utf8'),

    readBytes: async (path) => {
      const buffer = await readRegular('readBytes', path)
      return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
    },

    write: (path, data) =>
      op('write', path, true, async ({ host, relative }) => {
        refuseRoot('write', path, relative)
        const { parent, name } = splitHost(root, host)
        await inDir(parent, true, (dir) => writeEntry(dir, name!, data, path))
      }),

    list: (path = '.') =>
      op('list', path, true, async ({ host, relative }) => {
        const entries = await inDir(host, false, (dir) => readdir(dir.at(), { withFileTypes: true }))
        return entries
          .map((entry): SandboxDirEntry => ({ name: entry.name, path: relative === '' ? entry.name : posix.join(relative, entry.name), type: typeOf(entry) }))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      }),

    mkdir: (path) =>
      op('mkdir', path, true, async ({ host }) => {
        await inDir(host, true, async () => undefined)
      }),

    remove: (path) =>
      op('remove', path, false, async ({ host, relative }) => {
        refuseRoot('remove', path, relative)
        const { parent, name } = splitHost(root, host)
        let dir: ConfinedDir
        try {
          dir = await openConfinedDir(root, parent, false)
        } catch (error) {
          if (isMissing(error)) return // nothing there to remove
          throw error
        }
        try {
          await removeEntry(dir, name!)
        } finally {
          await dir.close()
        }
      }),

    rename: (from, to) =>
      op('rename', from, false, async (source) => {
        refuseRoot('rename', from, source.relative)
        const target = await confinePath(to, root, false)
        refuseRoot('rename', to, target.relative)
        const src = splitHost(root, source.host)
        const dst = splitHost(root, target.host)
        await inDir(src.parent, false, async (sourceDir) => {
          await lstat(sourceDir.at(src.name)) // a missing source is reported against `from`
          try {
            await inDir(dst.parent, true, (targetDir) => rename(sourceDir.at(src.name), targetDir.at(dst.name)))
          } catch (error) {
            throw error instanceof PathChangedError || SandboxError.isInstance(error) ? error : fsError('rename', to, error)
          }
        })
      }),

    exists: (path) =>
      op('exists', path, false, async ({ host }) => {
        try {
          await lstatEntry(host)
          return true
        } catch (error) {
          if (isMissing(error)) return false
          throw error
        }
      }),

    lstat: (path) => op('lstat', path, false, async ({ host }) => toStat(await lstatEntry(host))),

    watch: async (onEvent, options) => {
      state.assertLive('fs.watch')
      return watchWorkspace(state.workspaceRoot, onEvent, options?.ignore)
    },
  }

  /** `lstat` of a confined path's last component, looked up inside its no-follow-opened parent. */
  async function lstatEntry(host: string): Promise<Stats> {
    const { parent, name } = splitHost(root, host)
    if (name === undefined) return lstat(root)
    return inDir(parent, false, (dir) => lstat(dir.at(name)))
  }
}

/**
 * Write `data` as the entry `name` of `dir`: create it exclusively when
 * missing, write in place when it is a singly linked regular file, replace
 * the entry (keeping the mode) when it has other hard links.
 */
async function writeEntry(dir: ConfinedDir, name: string, data: string | Uint8Array, path: string): Promise<void> {
  let info: Stats | undefined
  try {
    info = await lstat(dir.at(name))
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error
  }
  if (!info) {
    let file: FileHandle
    try {
      file = await open(dir.at(name), CREATE_FLAGS, 0o666)
    } catch (error) {
      // Something appeared under the name since the lstat (possibly a link): start over.
      if (errnoCode(error) === 'EEXIST' || errnoCode(error) === 'ELOOP') throw new PathChangedError(name)
      throw error
    }
    return writeAndClose(file, data)
  }
  refuseUnlessRegular('write', path, info)
  if (info.nlink > 1) return replaceEntry(dir, name, data, info.mode)
  const file = await openFile(dir.at(name), WRITE_FLAGS, 'write', path)
  const opened = await file.stat().catch(async (error: unknown) => {
    await file.close()
    throw error
  })
  try {
    refuseUnlessRegular('write', path, opened)
  } catch (error) {
    await file.close()
    throw error
  }
  if (opened.nlink > 1) {
    await file.close()
    return replaceEntry(dir, name, data, opened.mode)
  }
  try {
    await file.truncate(0)
  } catch (error) {
    await file.close()
    throw error
  }
  return writeAndClose(file, data)
}

/** Write a new file next to `name` and rename it over `name`: other hard links of the old file are never written. */
async function replaceEntry(dir: ConfinedDir, name: string, data: string | Uint8Array, mode: number): Promise<void> {
  const temp = `.tanstack-write-${randomUUID()}`
  const file = await open(dir.at(temp), CREATE_FLAGS, 0o600)
  try {
    await file.chmod(mode & 0o7777)
    await writeAndClose(file, data)
    await rename(dir.at(temp), dir.at(name))
  } catch (error) {
    await unlink(dir.at(temp)).catch(() => undefined)
    throw error
  }
}

async function writeAndClose(file: FileHandle, data: string | Uint8Array): Promise<void> {
  try {
    await file.writeFile(data)
  } finally {
    await file.close()
  }
}

/**
 * Remove `name` from `dir` without following links at any depth: files and
 * links are unlinked, a directory is opened no-follow, emptied through its
 * own descriptor, then removed. A missing entry is fine.
 */
async function removeEntry(dir: ConfinedDir, name: string): Promise<void> {
  let info: Stats
  try {
    info = await lstat(dir.at(name))
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return
    throw error
  }
  if (!info.isDirectory()) return unlinkEntry(dir, name)
  for (let attempt = 1; ; attempt++) {
    let child: ConfinedDir
    try {
      child = new ConfinedDir(await open(dir.at(name), constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW), join(dir.host, name))
    } catch (error) {
      const code = errnoCode(error)
      if (code === 'ENOENT') return
      // Swapped for a link or a file since the lstat: remove that entry itself, never what it points to.
      if (code === 'ENOTDIR' || code === 'ELOOP') return unlinkEntry(dir, name)
      throw error
    }
    try {
      const names = await readdir(child.at())
      for (let i = 0; i < names.length; i += REMOVE_CONCURRENCY) {
        await Promise.all(names.slice(i, i + REMOVE_CONCURRENCY).map((entry) => removeEntry(child, entry)))
      }
    } finally {
      await child.close()
    }
    try {
      await rmdir(dir.at(name))
      return
    } catch (error) {
      const code = errnoCode(error)
      if (code === 'ENOENT') return
      // Something was added meanwhile: empty it again, a bounded number of times.
      if (code === 'ENOTEMPTY' && attempt < 3) continue
      if (code === 'ENOTDIR') return unlinkEntry(dir, name)
      throw error
    }
  }
}

async function unlinkEntry(dir: ConfinedDir, name: string): Promise<void> {
  try {
    await unlink(dir.at(name))
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error
  }
}

/** Open a file whose entry was just checked; a link or FIFO that raced in is reported, never followed or waited on. */
async function openFile(at: string, flags: number, method: string, path: string): Promise<FileHandle> {
  try {
    return await open(at, flags)
  } catch (error) {
    const code = errnoCode(error)
    if (code === 'ELOOP') throw new PathChangedError(path)
    // A FIFO with no reader, opened for writing without blocking.
    if (code === 'ENXIO') throw specialFileError(method, path, 'a FIFO')
    throw error
  }
}

/**
 * Read at most `limit` bytes from `file`, expecting about `size`; when the
 * file grows past `limit` while being read, stop and throw `tooLarge()`.
 */
async function readBounded(file: FileHandle, size: number, limit: number, tooLarge: () => Error): Promise<Buffer> {
  const chunks: Buffer[] = []
  let total = 0
  for (;;) {
    const want = Math.min(Math.max(size - total, 64 * 1024), limit + 1 - total)
    const chunk = Buffer.allocUnsafe(want)
    const { bytesRead } = await file.read(chunk, 0, want, null)
    if (bytesRead === 0) break
    total += bytesRead
    if (total > limit) throw tooLarge()
    chunks.push(bytesRead === want ? chunk : chunk.subarray(0, bytesRead))
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)
}

/** Refuse anything but a regular file; a directory is `fs-failed` (EISDIR), a symlink means the path changed. */
function refuseUnlessRegular(method: string, path: string, info: Stats): void {
  if (info.isFile()) return
  if (info.isSymbolicLink()) throw new PathChangedError(path)
  if (info.isDirectory()) throw isADirectory()
  throw specialFileError(method, path, describeSpecial(info))
}

function describeSpecial(info: Stats): string {
  if (info.isFIFO()) return 'a FIFO'
  if (info.isSocket()) return 'a socket'
  if (info.isCharacterDevice()) return 'a character device'
  if (info.isBlockDevice()) return 'a block device'
  return 'not a regular file'
}

function specialFileError(method: string, path: string, what: string): SandboxPathError {
  return new SandboxPathError('special-file', path, `fs.${method} refuses ${JSON.stringify(path)}: it is ${what}, not a regular file. The host only reads and writes regular files (a FIFO or device could block it or have side effects); remove it or use exec inside the sandbox.`)
}

function hardLinkError(method: string, path: string, links: number): SandboxPathError {
  return new SandboxPathError('hard-link', path, `fs.${method} refuses ${JSON.stringify(path)}: the file has ${links} hard links, and another one may be a file outside the workspace. Copy it inside the sandbox (cp) and read the copy, or remove the other links.`)
}

function tooLargeError(method: string, path: string, limit: number, size?: number): SandboxLimitError<'file-too-large'> {
  const what = size === undefined ? 'grew past' : `is ${size} bytes, more than`
  return new SandboxLimitError('file-too-large', {
    limitBytes: limit,
    option: 'localProcessSandbox({ maxReadBytes })',
    provider: PROVIDER_NAME,
    path,
    message: `fs.${method}: ${JSON.stringify(path)} ${what} the read limit of ${limit} bytes. Raise localProcessSandbox({ maxReadBytes }) or read it in parts with exec (e.g. head -c, split).`,
  })
}

/** The errno error `fs.read` of a directory has always reported (fs-failed, EISDIR). */
function isADirectory(): Error {
  return Object.assign(new Error('EISDIR: illegal operation on a directory'), { code: 'EISDIR' })
}

function isMissing(error: unknown): boolean {
  return errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR'
}

function refuseRoot(method: string, path: string, relative: string): void {
  if (relative !== '') return
  throw new SandboxPathError('invalid', path, `fs.${method} refuses the workspace root itself (${JSON.stringify(path)}). Name an entry inside it, or call handle.destroy() to delete the whole sandbox.`)
}

function typeOf(entry: Dirent | Stats): SandboxDirEntry['type'] {
  if (entry.isSymbolicLink()) return 'symlink'
  if (entry.isFile()) return 'file'
  if (entry.isDirectory()) return 'directory'
  return 'other'
}

function toStat(stats: Stats): SandboxFileStat {
  return { type: typeOf(stats), size: stats.size, mode: stats.mode & 0o7777, mtimeMs: stats.mtimeMs }
}
