/**
 * `removeTree`: deletes a sandbox directory whatever the agent left in it,
 * including a folder chain whose full path is longer than PATH_MAX and folders
 * it made unreadable (chmod 000). It never follows a symlink out of the tree.
 * Invariant: every path it hands to the OS is at most two names below `top`.
 */
import { chmod, lstat, readdir, rename, rm, rmdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { errnoCode } from './errors.js'

/**
 * Remove `top` and everything under it; a missing `top` is not an error.
 *
 * The fast path is `fs.rm({ recursive: true })`. When it fails (`ENAMETOOLONG`
 * on a deep chain, `EACCES` on a folder the agent locked), the slow path flattens
 * the tree instead of descending it: every sub-folder met is first given back
 * owner rwx (so a chmod 000 folder the app user owns can be read and emptied),
 * then renamed to a short unique name directly inside `top`. A folder is emptied
 * of files and links, its sub-folders moved up, and removed; the moved ones are
 * handled the same way. No path ever grows with the depth of the chain, so there
 * is no PATH_MAX to hit, and no `process.chdir` (not allowed in workers).
 *
 * @param top - Absolute path of the directory to delete (short: the sandbox directory).
 * @returns Resolves once `top` is gone.
 * @throws The underlying `fs` error (with its `code`) when an entry cannot be removed, e.g. one owned by another user.
 */
export async function removeTree(top: string): Promise<void> {
  try {
    await rm(top, { recursive: true, force: true })
    return
  } catch {
    // Fall through to the flattening walk below.
  }
  try {
    if (!(await lstat(top)).isDirectory()) return await unlink(top)
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return
    throw error
  }
  // Unique per call, so a moved folder never lands on (and replaces) an existing empty folder.
  const prefix = `.removing-${process.pid}-${Date.now().toString(36)}-`
  let moved = 0
  const pending: string[] = [top]
  while (pending.length > 0) {
    const dir = pending[pending.length - 1]!
    await chmod(dir, 0o700)
    const entries = await readdir(dir, { withFileTypes: true })
    let grew = false
    for (const entry of entries) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        if (dir === top && entry.name.startsWith(prefix)) continue // already moved up, still queued
        const shallow = join(top, `${prefix}${moved++}`)
        await chmod(path, 0o700)
        await rename(path, shallow)
        pending.push(shallow)
        grew = true
      } else {
        await unlink(path) // files, symlinks (never followed), sockets, fifos
      }
    }
    if (grew) continue // empty the moved folders first
    pending.pop()
    await rmdir(dir)
  }
}
