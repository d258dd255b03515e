/**
 * Path confinement of the directory provider: turn whatever path a caller
 * gives (`src/a.ts`, `/workspace/src/a.ts`, `<workspaceRoot>/src/a.ts`) into a
 * host path that is inside the workspace once every symlink is resolved.
 * Core's `toWorkspaceRelative` does the lexical half (`..`, absolute paths
 * outside); `locate` does the physical half (symlinks, including dangling
 * ones, which `realpath` cannot follow). The agent can change the tree between
 * that check and the operation (swap a folder for a symlink), so `openFolder`
 * then re-walks the checked path one folder at a time without following any
 * link, and the fs methods name entries only as `/proc/self/fd/<fd>/<name>`:
 * "this name in the folder I already hold open", the way `openat` does in C.
 * Invariant: every path `locate` returns is the workspace root or under it,
 * and every folder `openFolder` returns was reached from the root through
 * real folders only.
 */
import { constants } from 'node:fs'
import { lstat, mkdir, open, readlink, realpath } from 'node:fs/promises'
import type { FileHandle } from 'node:fs/promises'
import { basename, dirname, join, relative as relativeTo, resolve } from 'node:path'
import { SandboxPathError, toWorkspaceRelative } from '@tanstack/ai-sandbox'

/** Linux gives up on a path after 40 symlinks (ELOOP); so do we. */
const MAX_LINKS = 40

/** The errno code of a Node system error (`'ENOENT'`), or `undefined`. */
export function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/**
 * Where `path` really leads: `realpath` when everything exists; otherwise the
 * real parent plus the last name, and when that last name is a dangling
 * symlink (`realpath` fails on it), its target, resolved the same way.
 * @throws SandboxPathError `invalid` after {@link MAX_LINKS} symlinks (a loop).
 */
async function physical(path: string, original: string, links = 0): Promise<string> {
  try {
    return await realpath(path)
  } catch (error) {
    const code = codeOf(error)
    if (code === 'ELOOP') throw tooManyLinks(original)
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error
  }
  // Something on the way is missing. `dirname('/')` is `/`, which always exists, so this ends.
  const parent = await physical(dirname(path), original, links)
  const candidate = join(parent, basename(path))
  const target = await readlink(candidate).catch(() => undefined)
  if (target === undefined) return candidate // really missing: the operation creates it or reports not-found
  if (links >= MAX_LINKS) throw tooManyLinks(original)
  return physical(resolve(parent, target), original, links + 1) // a dangling link: follow where it points
}

/** True when `candidate` is `root` or below it. */
function isInside(candidate: string, root: string): boolean {
  return candidate === root || candidate.startsWith(`${root}/`)
}

/**
 * Map a caller's path to a host path inside the workspace.
 *
 * @param path - Workspace-relative, `/workspace/...`, or absolute under `root`.
 * @param root - The workspace directory, already free of symlinks (`realpath`).
 * @param followLast - `true` for reads and writes (a final symlink is followed);
 *   `false` for `lstat`, `exists`, `remove` and `rename`, which act on the link itself.
 * @returns `{ relative, host }`: the normalised workspace-relative path (`''` is
 *   the root) and the host path to operate on.
 * @throws SandboxPathError `invalid` (empty, NUL byte, a symlink loop),
 *   `escape` (`..` or an absolute path outside), `symlink-escape` (a symlink,
 *   dangling or not, that leads outside the workspace).
 */
export async function locate(path: string, root: string, followLast: boolean): Promise<{ relative: string; host: string }> {
  const relative = toWorkspaceRelative(path, root) // lexical: throws `escape` / `invalid`
  if (relative === '') return { relative, host: root }
  const lexical = join(root, relative)
  const host = followLast ? await physical(lexical, path) : join(await physical(dirname(lexical), path), basename(lexical))
  if (!isInside(host, root)) {
    throw new SandboxPathError(
      'symlink-escape',
      path,
      `Path ${JSON.stringify(path)} goes through a symlink that leads outside the sandbox workspace (to ${JSON.stringify(host)}). Only symlinks that stay inside the workspace are followed.`,
    )
  }
  return { relative, host }
}

/** A folder: read-only, must be a folder, and must not itself be a symlink. */
export const FOLDER_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW

/** The entry `name` inside the open folder `folder` (the folder itself without `name`), immune to renames and swaps. */
export function at(folder: FileHandle, name?: string): string {
  return name === undefined ? `/proc/self/fd/${folder.fd}` : `/proc/self/fd/${folder.fd}/${name}`
}

/**
 * Open the folder `host` (a path `locate` returned, so free of symlinks when
 * it was checked) by walking from `root` one folder at a time, each opened
 * inside the previous one and never through a symlink.
 *
 * @param create - Create missing folders on the way, as `mkdir -p` does.
 * @returns The open folder; the caller closes it.
 * @throws SandboxPathError `symlink-escape` when a folder on the way has
 *   become a symlink since the check; the Node error (`ENOENT`, `ENOTDIR`)
 *   when one is missing or is a file.
 */
export async function openFolder(root: string, host: string, create: boolean, path: string): Promise<FileHandle> {
  let folder = await open(root, FOLDER_FLAGS)
  try {
    for (const name of relativeTo(root, host).split('/').filter(Boolean)) {
      if (create) await mkdir(at(folder, name)).catch((error: unknown) => { if (codeOf(error) !== 'EEXIST') throw error })
      const next = await open(at(folder, name), FOLDER_FLAGS).catch(async (error: unknown) => {
        if ((await lstat(at(folder, name)).catch(() => undefined))?.isSymbolicLink()) {
          throw new SandboxPathError('symlink-escape', path, `Path ${JSON.stringify(path)} changed while it was used: ${JSON.stringify(name)} became a symlink. Refused, so nothing outside the workspace is touched.`, { cause: error })
        }
        throw error
      })
      await folder.close()
      folder = next
    }
    return folder
  } catch (error) {
    await folder.close().catch(() => undefined)
    throw error
  }
}

function tooManyLinks(path: string): SandboxPathError {
  return new SandboxPathError('invalid', path, `Path ${JSON.stringify(path)} passes through more than ${MAX_LINKS} symlinks (a loop?). Remove the loop or use the target path.`)
}
