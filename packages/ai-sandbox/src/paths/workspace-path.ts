/**
 * Lexical mapping of caller paths onto a workspace root. Accepts
 * workspace-relative paths, the virtual `/workspace/...` and absolute paths
 * under the real root; refuses anything that leaves the root. Symlink checks
 * need the real filesystem and stay with each provider.
 */
import { posix } from 'node:path'
import { SandboxPathError } from '../contracts/errors.js'
import { VIRTUAL_WORKSPACE_ROOT } from '../contracts/handle.js'

/**
 * Resolve `path` to a normalised workspace-relative path (`''` is the root).
 *
 * @param path - Relative, `/workspace/...`, or absolute under `workspaceRoot`.
 * @param workspaceRoot - The provider's real workspace directory (POSIX).
 * @returns e.g. `src/a.ts`; never starts with `/` or `..`.
 * @throws SandboxPathError `invalid` for an empty path or a NUL byte, `escape` when it leaves the workspace.
 */
export function toWorkspaceRelative(path: string, workspaceRoot: string): string {
  if (typeof path !== 'string' || path.length === 0 || path.includes('\0')) {
    throw new SandboxPathError('invalid', String(path), `Invalid sandbox path ${JSON.stringify(path)}: give a non-empty path without NUL bytes, relative to the workspace or under ${VIRTUAL_WORKSPACE_ROOT}.`)
  }
  const root = posix.normalize(workspaceRoot).replace(/\/+$/, '') || '/'
  let relative: string
  if (path === VIRTUAL_WORKSPACE_ROOT || path.startsWith(`${VIRTUAL_WORKSPACE_ROOT}/`)) {
    relative = path.slice(VIRTUAL_WORKSPACE_ROOT.length)
  } else if (path === root || path.startsWith(`${root}/`)) {
    relative = path.slice(root.length)
  } else if (path.startsWith('/')) {
    throw escape(path)
  } else {
    relative = path
  }
  const normalised = posix.normalize(`/${relative}`)
  // posix.normalize('/..') is '/', so detect climbing before normalising away.
  if (climbsOut(relative)) throw escape(path)
  return normalised.replace(/^\/+/, '').replace(/\/+$/, '')
}

/**
 * Map a path (or `cwd`) to the absolute path processes inside the sandbox use.
 * @throws SandboxPathError as {@link toWorkspaceRelative}.
 */
export function toSandboxPath(path: string, workspaceRoot: string): string {
  const relative = toWorkspaceRelative(path, workspaceRoot)
  return relative === '' ? workspaceRoot : posix.join(workspaceRoot, relative)
}

function climbsOut(relative: string): boolean {
  let depth = 0
  for (const part of relative.split('/')) {
    if (part === '' || part === '.') continue
    depth += part === '..' ? -1 : 1
    if (depth < 0) return true
  }
  return false
}

function escape(path: string): SandboxPathError {
  return new SandboxPathError('escape', path, `Path ${JSON.stringify(path)} is outside the sandbox workspace. Use a path relative to the workspace root or under ${VIRTUAL_WORKSPACE_ROOT}/.`)
}
