/**
 * What the container providers (Docker, Daytona) make of a run of the
 * confined fs script (fs-script.ts): lexical paths, the typed error for each
 * non-zero exit, the read-size error, the workspace-root refusal and the
 * `lstat` line. One owner, so both providers say the same thing.
 * Design notes: docs/design/docker.md (fs script)
 */
import { SandboxLimitError, SandboxOperationError, SandboxPathError } from '../contracts/errors.js'
import type { SandboxError } from '../contracts/errors.js'
import type { SandboxDirEntry, SandboxFileStat } from '../contracts/fs.js'
import { toWorkspaceRelative } from '../paths/workspace-path.js'
import { FS_EXIT } from './fs-script.js'

/** A caller path mapped lexically onto the workspace. */
export interface FsScriptPath {
  /** As given. */
  readonly path: string
  /** Workspace-relative, `''` for the root. */
  readonly relative: string
  /** What the script gets: `relative`, or `.` for the root. */
  readonly arg: string
}

/** Who runs the script, for messages: the provider's name and its read-limit option, e.g. `dockerSandbox({ maxReadBytes })`. */
export interface FsScriptOwner {
  readonly provider: string
  readonly readLimitOption: string
}

/**
 * Map `path` lexically onto `workspaceRoot`.
 * @throws SandboxPathError as `toWorkspaceRelative`.
 */
export function fsScriptPath(path: string, workspaceRoot: string): FsScriptPath {
  const relative = toWorkspaceRelative(path, workspaceRoot)
  return { path, relative, arg: relative === '' ? '.' : relative }
}

/** The entry types of the script's `list` records (first character of each). */
export const FS_ENTRY_TYPES: Readonly<Record<string, SandboxDirEntry['type']>> = { f: 'file', d: 'directory', l: 'symlink', o: 'other' }

/**
 * The typed error for a non-zero exit of the fs script.
 * @param method - The `fs` method, e.g. `read`.
 * @param paths - The paths of the call (two for `rename`).
 * @param run - The exit code and stderr (trimmed).
 * @param maxReadBytes - The read limit, in bytes, named by a `file-too-large` error.
 */
export function fsScriptError(owner: FsScriptOwner, method: string, paths: readonly FsScriptPath[], run: { readonly code: number; readonly stderr: string }, maxReadBytes: number): SandboxError {
  const [first, second] = paths
  const path = first?.path ?? '.'
  if (run.code === FS_EXIT.escape) {
    const [label, ...rest] = run.stderr.split('\n')
    const culprit = label === 'to' && second ? second.path : path
    return new SandboxPathError('symlink-escape', culprit, `fs.${method}: ${JSON.stringify(culprit)} goes through a symlink that leads outside the sandbox workspace (to ${JSON.stringify(rest.join('\n'))}). Only symlinks that stay inside the workspace can be followed.`)
  }
  if (run.code === FS_EXIT.notFound) {
    return new SandboxPathError('not-found', path, `fs.${method}: ${JSON.stringify(path)} does not exist in the sandbox workspace (${run.stderr}). Check the path, or create it first with fs.write/fs.mkdir.`)
  }
  if (run.code === FS_EXIT.special) {
    return new SandboxPathError('special-file', path, `fs.${method} refuses ${JSON.stringify(path)}: it is ${run.stderr}, not a regular file. The host only reads and writes regular files (a FIFO or device could block it or have side effects); remove it or use exec inside the sandbox.`)
  }
  if (run.code === FS_EXIT.hardLink) {
    return new SandboxPathError('hard-link', path, `fs.${method} refuses ${JSON.stringify(path)}: the file has ${run.stderr} hard links, and another one may be a file outside the workspace. Copy it inside the sandbox (cp) and read the copy, or remove the other links.`)
  }
  if (run.code === FS_EXIT.tooLarge) return fsTooLargeError(owner, method, path, maxReadBytes, run.stderr)
  if (run.code === FS_EXIT.loop) {
    return new SandboxPathError('invalid', path, `fs.${method}: ${JSON.stringify(path)} has more than 40 nested symlinks (a loop?). Remove the loop or use the target path directly.`)
  }
  if (run.code === FS_EXIT.root) return rootError(method, path)
  const what = run.code === FS_EXIT.wrongType ? run.stderr : `exit ${run.code}: ${run.stderr || 'no output'}`
  return new SandboxOperationError('fs-failed', owner.provider, `fs.${method} failed for ${paths.map((p) => JSON.stringify(p.path)).join(' -> ')} (${what}).`)
}

/** The `file-too-large` error of a read over `limit` bytes; `size` when the script measured it. */
export function fsTooLargeError(owner: FsScriptOwner, method: string, path: string, limit: number, size?: string): SandboxLimitError<'file-too-large'> {
  const what = size ? `is ${size} bytes, more than` : 'grew past'
  return new SandboxLimitError('file-too-large', {
    limitBytes: limit,
    option: owner.readLimitOption,
    provider: owner.provider,
    path,
    message: `fs.${method}: ${JSON.stringify(path)} ${what} the read limit of ${limit} bytes. Raise ${owner.readLimitOption} or read it in parts with exec (e.g. head -c, split).`,
  })
}

/** @throws SandboxPathError `invalid` when `target` is the workspace root itself (write, remove, rename). */
export function refuseWorkspaceRoot(method: string, target: FsScriptPath): void {
  if (target.relative === '') throw rootError(method, target.path)
}

function rootError(method: string, path: string): SandboxPathError {
  return new SandboxPathError('invalid', path, `fs.${method} refuses the workspace root itself (${JSON.stringify(path)}). Name an entry inside it, or call handle.destroy() to delete the whole sandbox.`)
}

/**
 * Parse the script's `lstat` line, `stat -c '%f %s %Y'`: raw mode in hex, size in bytes, mtime in seconds.
 * @throws SandboxOperationError `fs-failed` for a line of another shape.
 */
export function parseFsStat(owner: FsScriptOwner, line: string, path: string): SandboxFileStat {
  const [rawMode, size, mtime] = line.split(' ')
  const mode = Number.parseInt(rawMode ?? '', 16)
  if (!Number.isFinite(mode) || size === undefined || mtime === undefined) {
    throw new SandboxOperationError('fs-failed', owner.provider, `fs.lstat(${JSON.stringify(path)}): unexpected stat output ${JSON.stringify(line)}.`)
  }
  const format = mode & 0o170000
  const type = format === 0o100000 ? 'file' : format === 0o040000 ? 'directory' : format === 0o120000 ? 'symlink' : 'other'
  return { type, size: Number(size), mode: mode & 0o7777, mtimeMs: Number(mtime) * 1000 }
}
