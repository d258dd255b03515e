/**
 * The portable workspace listing behind the poll watcher and every
 * reconciliation: one `find` + `stat` through `exec`, parsed into a map from
 * workspace-relative path to a change signature (inode, size, mtime with
 * nanoseconds). Works with GNU and BusyBox tools: no `find -printf`, and
 * `stat -c '%i %s %y|%n'` prints the same shape on both (checked on the
 * Debian and BusyBox test images). Pure parsing and diffing; only
 * {@link listWorkspace} does IO.
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { shellJoin, shellQuote } from '../shell/quote.js'
import { WorkspaceWatchError } from './errors.js'

/** Path to signature (`'<inode> <size> <mtime>'`); files and symlinks only, never directories. */
export type WorkspaceListing = ReadonlyMap<string, string>

/** One difference between two listings. */
export interface ListingChange {
  readonly type: 'create' | 'change' | 'delete'
  /** Workspace-relative, `/`-separated. */
  readonly path: string
}

/**
 * The shell command that lists every file and symlink below the current
 * directory, pruning `ignore` entries (a name prunes that name at any depth;
 * an entry with a `/` prunes that workspace-relative path).
 *
 * @example
 * ```ts
 * listCommand(['.git', 'node_modules'])
 * // find . \( -name .git -o -name node_modules \) -prune -o \( -type f -o -type l \) -exec stat -c '%i %s %y|%n' {} +
 * ```
 */
export function listCommand(ignore: readonly string[]): string {
  const prunes = ignore.map((entry) => (entry.includes('/') ? `-path ${shellQuote(`./${entry.replace(/^\.?\/+|\/+$/g, '')}`)}` : `-name ${shellQuote(entry)}`))
  const prune = prunes.length > 0 ? `\\( ${prunes.join(' -o ')} \\) -prune -o ` : ''
  return `find . ${prune}\\( -type f -o -type l \\) -exec ${shellJoin(['stat', '-c', '%i %s %y|%n'])} {} +`
}

/**
 * Parse the output of {@link listCommand}. Lines without the `|` separator
 * (the tail of a file name containing a newline) are skipped.
 *
 * @example
 * ```ts
 * parseListing('1630978 3 2026-11-29 09:27:09.542328599 +0000|./a/x.txt\n').get('a/x.txt') // '1630978 3 2026-11-29 09:27:09.542328599 +0000'
 * ```
 */
export function parseListing(stdout: string): Map<string, string> {
  const listing = new Map<string, string>()
  for (const line of stdout.split('\n')) {
    const bar = line.indexOf('|')
    if (bar <= 0) continue
    const name = line.slice(bar + 1)
    const path = name.startsWith('./') ? name.slice(2) : name
    if (path === '' || path === '.') continue
    listing.set(path, line.slice(0, bar))
  }
  return listing
}

/**
 * What changed from `previous` to `next`, sorted by path. A path whose
 * previous signature is `null` (reported by a native watcher, signature
 * unknown) counts as unchanged while it exists.
 *
 * @example
 * ```ts
 * diffListings(new Map([['a', '1 1 t']]), new Map([['b', '2 1 t']])) // [{ type: 'create', path: 'b' }, { type: 'delete', path: 'a' }]
 * ```
 */
export function diffListings(previous: ReadonlyMap<string, string | null>, next: WorkspaceListing): ListingChange[] {
  const changes: ListingChange[] = []
  for (const [path, signature] of next) {
    if (!previous.has(path)) changes.push({ type: 'create', path })
    else {
      const before = previous.get(path)
      if (before !== null && before !== signature) changes.push({ type: 'change', path })
    }
  }
  for (const path of previous.keys()) if (!next.has(path)) changes.push({ type: 'delete', path })
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/**
 * List the workspace of `handle` with one `exec`.
 *
 * @throws WorkspaceWatchError `list-failed` when the command fails without
 *   printing anything (no `find` or `stat` in the sandbox, or the sandbox is
 *   gone). A file vanishing mid-walk is not an error.
 */
export async function listWorkspace(handle: SandboxHandle, ignore: readonly string[], signal?: AbortSignal): Promise<Map<string, string>> {
  let result
  try {
    result = await handle.process.exec(listCommand(ignore), { cwd: handle.workspaceRoot, ...(signal ? { signal } : {}) })
  } catch (error) {
    throw new WorkspaceWatchError('list-failed', `Listing the workspace of sandbox ${handle.id} failed: ${(error as Error).message}`, { cause: error })
  }
  // find exits 1 when a file vanished during the walk; what it printed is still right.
  if (result.exitCode !== 0 && result.stdout === '') {
    throw new WorkspaceWatchError(
      'list-failed',
      `Listing the workspace of sandbox ${handle.id} failed with exit code ${result.exitCode}: ${result.stderr.trim().slice(-500) || '(no output)'}. The poll watcher needs \`find\` and \`stat -c\` (GNU coreutils or BusyBox) in the sandbox image.`,
    )
  }
  return parseListing(result.stdout)
}
