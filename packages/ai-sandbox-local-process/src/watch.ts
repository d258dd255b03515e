/**
 * `fs.watch` of the local-process provider: Node's recursive `fs.watch` on the
 * host workspace, turned into create/change/delete events. Node reports only
 * "rename" or "change", so the kind is decided by checking whether the path
 * exists now and whether it was known before (a set seeded by a walk of the
 * tree at start). Events are handled one at a time, in arrival order.
 * Invariant: after `close()` resolves, `onEvent` is never called again.
 */
import { watch } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { SandboxWatchEvent, SandboxWatcher } from '@tanstack/ai-sandbox'
import { errnoCode, fsError } from './errors.js'

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
  const known = new Set<string>()
  let queue: Promise<void> = Promise.resolve()
  const watcher = watch(root, { recursive: true }, (_kind, filename) => {
    if (closed || filename === null) return
    const path = filename.split(sep).join('/')
    if (path === '' || ignored(path)) return
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
  } catch (error) {
    closed = true
    watcher.close()
    throw error
  }

  async function classify(path: string): Promise<void> {
    let isDirectory: boolean
    try {
      isDirectory = (await lstat(join(root, path))).isDirectory()
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT' && errnoCode(error) !== 'ENOTDIR') return // unreadable now: skip, a later event retries
      if (known.has(path)) forgetTree(path)
      return
    }
    if (!known.has(path)) {
      known.add(path)
      emit('create', path)
    } else if (!isDirectory) {
      emit('change', path)
    }
  }

  /** Emit deletes for a vanished path and every known path below it (deepest first). */
  function forgetTree(path: string): void {
    const prefix = `${path}/`
    const below = [...known].filter((candidate) => candidate.startsWith(prefix)).sort().reverse()
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

/** Record every existing path below `dir` (skipping ignored ones) as known. */
async function seed(root: string, dir: string, known: Set<string>, ignored: (path: string) => boolean): Promise<void> {
  let entries
  try {
    entries = await readdir(join(root, dir), { withFileTypes: true })
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return // removed while walking: nothing to know
    throw fsError('watch', dir || '.', error)
  }
  for (const entry of entries) {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`
    if (ignored(path)) continue
    known.add(path)
    if (entry.isDirectory()) await seed(root, path, known, ignored)
  }
}

function isIgnored(path: string, ignore: readonly string[]): boolean {
  const segments = path.split('/')
  return ignore.some((entry) => (entry.includes('/') ? path === entry || path.startsWith(`${entry}/`) : segments.includes(entry)))
}
