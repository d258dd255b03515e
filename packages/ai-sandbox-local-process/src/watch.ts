/**
 * `fs.watch` of the local-process provider: Node's recursive `fs.watch` on the
 * host workspace, turned into create/change/delete events. Node reports only
 * "rename" or "change", so the kind is decided by checking whether the path
 * exists now and whether it was known before (seeded by a walk of the tree
 * at start). Node also reports paths nobody touched (on Linux, every sibling
 * sharing a name prefix with a removed directory), so a known file is a
 * `change` only when its signature (inode, size, mtime in ns) moved.
 * Events are handled one at a time, in arrival order.
 * Invariant: after `close()` resolves, `onEvent` is never called again.
 */
import { lstatSync, watch, type BigIntStats } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { SandboxWatchEvent, SandboxWatcher } from '@tanstack/ai-sandbox'
import { errnoCode, fsError } from './errors.js'

/** Files `lstat`ed synchronously while seeding before the event loop gets a turn (about a millisecond's work). */
const SEED_BATCH = 200

/** Path segments ignored when the caller passes no `ignore` list. */
export const DEFAULT_WATCH_IGNORE: readonly string[] = ['.git', 'node_modules']

/**
 * Watch `root` recursively until `close()`.
 *
 * @param root - Real host workspace directory.
 * @param onEvent - Called with workspace-relative, `/`-separated paths.
 * @param ignore - Entries matched against every path segment (or a
 *   `/`-separated prefix). Default {@link DEFAULT_WATCH_IGNORE}; a list
 *   replaces the default.
 * @returns A watcher whose `close()` resolves after the last event was delivered.
 * @throws SandboxOperationError `fs-failed` when the tree cannot be read at start.
 *   An exception thrown by `onEvent` is rethrown asynchronously, as an
 *   EventEmitter listener's would be.
 */
export async function watchWorkspace(root: string, onEvent: (event: SandboxWatchEvent) => void, ignore: readonly string[] = DEFAULT_WATCH_IGNORE): Promise<SandboxWatcher> {
  const ignored = (path: string) => isIgnored(path, ignore)
  let closed = false
  /** Known paths: a file's or symlink's {@link signature}, `null` for a directory. */
  const known = new Map<string, string | null>()
  /** Paths reported while seeding: their seeded signature may already hold the change, so their next check is a change. */
  const early = new Set<string>()
  let seeding = true
  let queue: Promise<void> = Promise.resolve()
  const watcher = watch(root, { recursive: true }, (_kind, filename) => {
    if (closed || filename === null) return
    const path = filename.split(sep).join('/')
    if (path === '' || ignored(path)) return
    if (seeding) early.add(path)
    queue = queue.then(() => classify(path))
  })
  // The root vanishing (sandbox destroyed) ends the watch; events simply stop.
  watcher.on('error', () => {
    closed = true
    watcher.close()
  })
  // Start watching first, then seed: events wait in the queue behind the seed.
  const seeded = seed(root, '', known, ignored)
  queue = seeded.catch(() => undefined) // a seed failure is thrown just below instead
  try {
    await seeded
    seeding = false
  } catch (error) {
    closed = true
    watcher.close()
    throw error
  }

  async function classify(path: string): Promise<void> {
    const reportedEarly = early.delete(path)
    let now: string | null
    try {
      now = signature(await lstat(join(root, path), { bigint: true }))
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT' && errnoCode(error) !== 'ENOTDIR') return // unreadable now: skip, a later event retries
      if (known.has(path)) forgetTree(path)
      return
    }
    if (!known.has(path)) {
      known.set(path, now)
      emit('create', path)
      return
    }
    const before = known.get(path)
    known.set(path, now)
    if (now !== null && (now !== before || reportedEarly)) emit('change', path) // the same signature: a report for a file nobody touched
  }

  /** Emit deletes for a vanished path and every known path below it (deepest first). */
  function forgetTree(path: string): void {
    const prefix = `${path}/`
    const below = [...known.keys()].filter((candidate) => candidate.startsWith(prefix)).sort().reverse()
    for (const candidate of [...below, path]) {
      known.delete(candidate)
      emit('delete', candidate)
    }
  }

  function emit(type: SandboxWatchEvent['type'], path: string): void {
    if (closed) return
    try {
      onEvent({ type, path, timestamp: Date.now() })
    } catch (error) {
      // Like an EventEmitter listener: the caller's bug surfaces as an uncaught exception.
      setImmediate(() => {
        throw error
      })
    }
  }

  return {
    close: async () => {
      closed = true
      watcher.close()
      await queue
    },
  }
}

/** `'<ino> <size> <mtimeNs>'` of a file or symlink (what a content change moves), `null` for a directory. */
function signature(stats: BigIntStats): string | null {
  return stats.isDirectory() ? null : `${stats.ino} ${stats.size} ${stats.mtimeNs}`
}

/** Record every existing path below `dir` (skipping ignored ones) as known, files with their signature. */
async function seed(root: string, dir: string, known: Map<string, string | null>, ignored: (path: string) => boolean): Promise<void> {
  let entries
  try {
    entries = await readdir(join(root, dir), { withFileTypes: true })
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return // removed while walking: nothing to know
    throw fsError('watch', dir || '.', error)
  }
  const folders: string[] = []
  for (const [index, entry] of entries.entries()) {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`
    if (ignored(path)) continue
    if (entry.isDirectory()) {
      known.set(path, null)
      folders.push(path)
      continue
    }
    // Synchronous on purpose (several times cheaper than a promise per file), yielding every SEED_BATCH files.
    if (index > 0 && index % SEED_BATCH === 0) await new Promise((resolve) => setImmediate(resolve))
    try {
      known.set(path, signature(lstatSync(join(root, path), { bigint: true })))
    } catch (error) {
      // Gone while walking: nothing to know. Unreadable: known, with a signature no file has, so its next report is a change.
      if (errnoCode(error) !== 'ENOENT') known.set(path, '')
    }
  }
  for (const folder of folders) await seed(root, folder, known, ignored)
}

function isIgnored(path: string, ignore: readonly string[]): boolean {
  const segments = path.split('/')
  return ignore.some((entry) => (entry.includes('/') ? path === entry || path.startsWith(`${entry}/`) : segments.includes(entry)))
}
