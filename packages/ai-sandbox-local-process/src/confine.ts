/**
 * Symlink-aware confinement of caller paths to the host workspace directory.
 * It walks a path one component at a time from the real workspace root,
 * following symlinks physically, and returns a host path with no symlink left
 * in it (except the last component when asked not to follow it).
 * Invariant: every path it returns is the workspace root or lies under it; the
 * fs methods operate on that returned path, never on the caller's string.
 */
import { lstat, readlink } from 'node:fs/promises'
import { dirname, join, sep } from 'node:path'
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
