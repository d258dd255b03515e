/**
 * `handle.fs` of the local-process provider: host filesystem calls on paths
 * confined by {@link confinePath}. Owns error mapping (missing path ->
 * `SandboxPathError` `not-found`, anything else -> `SandboxOperationError`
 * `fs-failed`). It must never hand a caller's string to `node:fs`: only the
 * confined host path is used, and the workspace root itself is never removed
 * or moved.
 */
import { lstat, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises'
import type { Dirent, Stats } from 'node:fs'
import { dirname, posix } from 'node:path'
import { SandboxError, SandboxPathError } from '@tanstack/ai-sandbox'
import type { SandboxDirEntry, SandboxFileStat, SandboxFs } from '@tanstack/ai-sandbox'
import { confinePath } from './confine.js'
import type { ConfinedPath } from './confine.js'
import { errnoCode, fsError } from './errors.js'
import type { SandboxState } from './sandbox-state.js'
import { watchWorkspace } from './watch.js'

/** Build the `fs` member of a handle over one sandbox's state. */
export function createLocalFs(state: SandboxState): SandboxFs {
  /** Run one fs operation: liveness check, confinement, error mapping. */
  async function op<T>(method: string, path: string, followLast: boolean, body: (target: ConfinedPath) => Promise<T>): Promise<T> {
    state.assertLive(`fs.${method}`)
    try {
      return await body(await confinePath(path, state.workspaceRoot, followLast))
    } catch (error) {
      throw SandboxError.isInstance(error) ? error : fsError(method, path, error)
    }
  }

  return {
    read: (path) => op('read', path, true, ({ host }) => readFile(host, 'utf8')),

    readBytes: (path) =>
      op('readBytes', path, true, async ({ host }) => {
        const buffer = await readFile(host)
        return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
      }),

    write: (path, data) =>
      op('write', path, true, async ({ host, relative }) => {
        refuseRoot('write', path, relative)
        await mkdir(dirname(host), { recursive: true })
        await writeFile(host, data)
      }),

    list: (path = '.') =>
      op('list', path, true, async ({ host, relative }) => {
        const entries = await readdir(host, { withFileTypes: true })
        return entries
          .map((entry): SandboxDirEntry => ({ name: entry.name, path: relative === '' ? entry.name : posix.join(relative, entry.name), type: typeOf(entry) }))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      }),

    mkdir: (path) =>
      op('mkdir', path, true, async ({ host }) => {
        await mkdir(host, { recursive: true })
      }),

    remove: (path) =>
      op('remove', path, false, async ({ host, relative }) => {
        refuseRoot('remove', path, relative)
        await rm(host, { recursive: true, force: true })
      }),

    rename: (from, to) =>
      op('rename', from, false, async (source) => {
        refuseRoot('rename', from, source.relative)
        const target = await confinePath(to, state.workspaceRoot, false)
        refuseRoot('rename', to, target.relative)
        await lstat(source.host) // a missing source is reported against `from`
        try {
          await mkdir(dirname(target.host), { recursive: true })
          await rename(source.host, target.host)
        } catch (error) {
          throw fsError('rename', to, error)
        }
      }),

    exists: (path) =>
      op('exists', path, false, async ({ host }) => {
        try {
          await lstat(host)
          return true
        } catch (error) {
          if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return false
          throw error
        }
      }),

    lstat: (path) => op('lstat', path, false, async ({ host }) => toStat(await lstat(host))),

    watch: async (onEvent, options) => {
      state.assertLive('fs.watch')
      return watchWorkspace(state.workspaceRoot, onEvent, options?.ignore)
    },
  }
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
