/**
 * Symlink-aware confinement of caller paths to the host workspace directory,
 * in two steps: {@link confinePath} resolves, {@link openConfinedDir} reopens
 * with no-follow. Invariant: every path returned is the root or under it, and
 * every directory opened is one the no-follow walk reached from the root.
 * Design notes: docs/design/local-process.md
 */
import { constants } from 'node:fs'
import { lstat, mkdir, open, readlink, realpath } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { dirname, join, relative as relativePath, sep } from 'node:path'
import { SandboxPathError, toWorkspaceRelative } from '@tanstack/ai-sandbox'
import { errnoCode } from './errors.js'

/** Linux gives up after 40 links (ELOOP); so do we. */
const MAX_SYMLINK_HOPS = 40

/** The result of {@link confinePath}. */
export interface ConfinedPath {
  /** Workspace-relative path as the caller meant it (`''` is the root), `/`-separated. */
  readonly relative: string
  /** Host path to operate on, inside the real workspace root. */
  readonly host: string
}

/**
 * Resolve a caller path to a host path inside `realRoot`.
 *
 * @param path - Relative, `/workspace/...`, or absolute under the workspace.
 * @param realRoot - The workspace directory with symlinks already resolved.
 * @param followLast - Follow a symlink in the final component (reads, writes)
 *   or describe the link itself (`lstat`, `remove`, `rename`, `exists`).
 * @throws SandboxPathError `invalid`/`escape` for a bad or climbing path,
 *   `symlink-escape` when a symlink leads outside the workspace.
 */
export async function confinePath(path: string, realRoot: string, followLast: boolean): Promise<ConfinedPath> {
  const relative = toWorkspaceRelative(path, realRoot)
  const parts = relative === '' ? [] : relative.split('/')
  const budget = { hops: 0 }
  const host = await walk(realRoot, parts, followLast, path, budget)
  if (!isInside(host, realRoot)) {
    throw new SandboxPathError('symlink-escape', path, `Path ${JSON.stringify(path)} goes through a symlink that leads outside the sandbox workspace (to ${JSON.stringify(host)}). Only symlinks that stay inside the workspace can be followed.`)
  }
  return { relative, host }
}

/** Open a directory: read-only, must be a directory, the last component must not be a symlink. */
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW

/** Whether `/proc/self/fd/<fd>/<name>` resolves relative to an open directory here. */
const PROC_FD = process.platform === 'linux'

/** How often an operation is retried when the path changed under it (a directory became a symlink). */
export const CHANGED_PATH_ATTEMPTS = 3

/**
 * Thrown inside a no-follow walk when a component that was a directory is now
 * a symlink: someone changed the path under us. {@link withConfinedPath}
 * confines the path again and retries.
 */
export class PathChangedError extends Error {
  constructor(readonly component: string) {
    super(`path component ${JSON.stringify(component)} changed to a symlink during the operation`)
  }
}

/** A directory opened by the no-follow walk; name entries in it with {@link ConfinedDir.at}. */
export class ConfinedDir {
  constructor(
    /** The open directory. */
    readonly handle: FileHandle,
    /** Its host path when it was opened (used for messages and off Linux). */
    readonly host: string,
  ) {}

  /**
   * A path naming `name` inside this very directory, whatever was renamed or
   * swapped since it was opened (Linux). `name` is one component, never `..`.
   * Without `name`, the directory itself.
   */
  at(name?: string): string {
    if (PROC_FD) return name === undefined ? `/proc/self/fd/${this.handle.fd}` : `/proc/self/fd/${this.handle.fd}/${name}`
    return name === undefined ? this.host : join(this.host, name)
  }

  close(): Promise<void> {
    return this.handle.close()
  }
}

/**
 * Open the workspace root itself, refusing it when it was replaced by a
 * symlink (the agent can rename its own workspace directory).
 *
 * @throws PathChangedError when `realRoot` is now a symlink or resolves elsewhere.
 */
export async function openRoot(realRoot: string): Promise<ConfinedDir> {
  let handle: FileHandle
  try {
    handle = await open(realRoot, DIR_FLAGS)
  } catch (error) {
    if (errnoCode(error) === 'ELOOP' || errnoCode(error) === 'ENOTDIR') throw new PathChangedError(realRoot)
    throw error
  }
  const dir = new ConfinedDir(handle, realRoot)
  if (PROC_FD && (await realpath(dir.at())) !== realRoot) {
    await dir.close()
    throw new PathChangedError(realRoot)
  }
  return dir
}

/**
 * Open the directory `host` (a path {@link confinePath} returned) by walking
 * from the workspace root one component at a time, each opened inside the
 * previous one with `O_NOFOLLOW`.
 *
 * @param create - Create missing components (mode 0777 minus umask), as `mkdir -p` would.
 * @returns The open directory; the caller closes it.
 * @throws PathChangedError when a component is now a symlink.
 * @throws The `ENOENT` (missing, `create` false) or `ENOTDIR` (a file on the path) error of the failed step.
 */
export async function openConfinedDir(realRoot: string, host: string, create: boolean): Promise<ConfinedDir> {
  const parts = host === realRoot ? [] : relativePath(realRoot, host).split(sep)
  let dir = await openRoot(realRoot)
  try {
    for (const part of parts) {
      const next = await openChild(dir, part, create)
      await dir.close()
      dir = next
    }
    return dir
  } catch (error) {
    await dir.close().catch(() => undefined)
    throw error
  }
}

/** Open `name` inside `dir` as a directory without following it, creating it first when asked. */
async function openChild(dir: ConfinedDir, name: string, create: boolean): Promise<ConfinedDir> {
  for (let attempt = 0; ; attempt++) {
    try {
      return new ConfinedDir(await open(dir.at(name), DIR_FLAGS), join(dir.host, name))
    } catch (error) {
      const code = errnoCode(error)
      if (code === 'ENOENT' && create && attempt === 0) {
        try {
          await mkdir(dir.at(name))
        } catch (mkdirError) {
          if (errnoCode(mkdirError) !== 'EEXIST') throw mkdirError
        }
        continue
      }
      // O_DIRECTORY|O_NOFOLLOW on a symlink fails with ENOTDIR (or ELOOP): tell a swapped-in link from a file.
      if (code === 'ENOTDIR' || code === 'ELOOP') {
        const info = await lstat(dir.at(name)).catch(() => undefined)
        if (info?.isSymbolicLink()) throw new PathChangedError(name)
      }
      throw error
    }
  }
}

/** The directory part of a confined host path and its last component (`undefined` for the root). */
export function splitHost(realRoot: string, host: string): { parent: string; name: string | undefined } {
  if (host === realRoot) return { parent: realRoot, name: undefined }
  return { parent: dirname(host), name: host.slice(dirname(host).length + 1) }
}

/**
 * Confine `path`, run `body` on the result, and when the path changed under
 * the body (a {@link PathChangedError}) confine it again and retry, up to
 * {@link CHANGED_PATH_ATTEMPTS} times in all.
 *
 * @throws SandboxPathError `symlink-escape` when the path keeps changing, or
 *   whatever {@link confinePath} and `body` throw.
 */
export async function withConfinedPath<T>(path: string, realRoot: string, followLast: boolean, body: (target: ConfinedPath) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await body(await confinePath(path, realRoot, followLast))
    } catch (error) {
      if (!(error instanceof PathChangedError)) throw error
      if (attempt >= CHANGED_PATH_ATTEMPTS) {
        throw new SandboxPathError('symlink-escape', path, `Path ${JSON.stringify(path)} kept changing while it was used (${error.message}); refused so nothing outside the workspace is touched. Stop the process that is swapping it and try again.`, { cause: error })
      }
    }
  }
}

/** True when `candidate` is `root` or below it. */
export function isInside(candidate: string, root: string): boolean {
  return candidate === root || candidate.startsWith(root.endsWith(sep) ? root : root + sep)
}

/**
 * Walk `parts` from the physical directory `base`. `..` climbs physically
 * (`base` never contains a symlink), a missing component ends the walk with
 * the rest appended verbatim (the operation itself will create or miss it).
 */
async function walk(base: string, parts: readonly string[], followLast: boolean, original: string, budget: { hops: number }): Promise<string> {
  let current = base
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index]!
    if (part === '' || part === '.') continue
    if (part === '..') {
      current = dirname(current)
      continue
    }
    const next = join(current, part)
    const isLast = index === parts.length - 1
    let stat
    try {
      stat = await lstat(next)
    } catch (error) {
      const code = errnoCode(error)
      // Missing (or a file used as a directory): nothing further to follow.
      if (code === 'ENOENT' || code === 'ENOTDIR') return join(next, ...parts.slice(index + 1))
      throw error
    }
    if (!stat.isSymbolicLink() || (isLast && !followLast)) {
      current = next
      continue
    }
    if (++budget.hops > MAX_SYMLINK_HOPS) {
      throw new SandboxPathError('invalid', original, `Path ${JSON.stringify(original)} has more than ${MAX_SYMLINK_HOPS} nested symlinks (a loop?). Remove the loop or use the target path directly.`)
    }
    const target = await readlink(next)
    const targetParts = target.split('/')
    // Absolute targets restart at `/`; relative ones at the link's directory.
    current = await walk(target.startsWith('/') ? '/' : current, targetParts, true, original, budget)
  }
  return current
}
