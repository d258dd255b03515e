/**
 * `fs.watch` of the local-process provider: the host workspace watched
 * recursively and turned into create/change/delete events, handled one at a
 * time in arrival order. Nothing is lost: new directories are walked, bursts
 * and watch failures fall back to rescans.
 * Invariant: after `close()` resolves, `onEvent` is never called again.
 * Design notes: docs/design/local-process.md
 */
import { existsSync, lstatSync, watch, type BigIntStats, type FSWatcher } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { join, sep } from 'node:path'
import type { SandboxWatchEvent, SandboxWatcher } from '@tanstack/ai-sandbox'
import { errnoCode, fsError } from './errors.js'

/** Files `lstat`ed synchronously while walking before the event loop gets a turn (about a millisecond's work). */
const SEED_BATCH = 200

/**
 * Unhandled native events above which they are no longer handled one by one:
 * the tree is rescanned against the known listing once the burst is quiet,
 * which also reports what an overflowing kernel queue dropped.
 */
export const BURST_RESCAN_EVENTS = 256

/** Quiet time, in ms, before a burst's rescan runs (and at most 10 times this after the burst began). */
const BURST_QUIET_MS = 50

/** Rescan interval, in ms, once a native watch could not be attached or failed. */
export const FALLBACK_POLL_MS = 1000

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
  let known = new Map<string, string | null>()
  /** Paths reported while seeding: their seeded signature may already hold the change, so their next check is a change. */
  const early = new Set<string>()
  let seeding = true
  let queue: Promise<void> = Promise.resolve()
  /** Native events queued and not yet handled. */
  let backlog = 0
  let burst: { timer: ReturnType<typeof setTimeout>; since: number } | undefined
  let poll: ReturnType<typeof setInterval> | undefined
  /** Linux: the watch of each known directory ('' is the root). */
  const folders = new Map<string, FSWatcher>()
  const perFolder = process.platform === 'linux'

  const onNative = (path: string) => {
    if (closed || path === '' || ignored(path)) return
    if (seeding) early.add(path)
    if (poll) return // the fallback poll reports everything
    if (burst || backlog >= BURST_RESCAN_EVENTS) return scheduleRescan()
    backlog++
    queue = queue.then(() => {
      backlog--
      return burst ? undefined : classify(path)
    })
  }

  /** One rescan once the burst is quiet (at most 10 quiet periods after it began). */
  function scheduleRescan(): void {
    const now = Date.now()
    const since = burst?.since ?? now
    if (burst) clearTimeout(burst.timer)
    const timer = setTimeout(() => {
      burst = undefined
      queue = queue.then(rescan)
    }, Math.max(0, Math.min(BURST_QUIET_MS, since + 10 * BURST_QUIET_MS - now)))
    burst = { timer, since }
  }

  /** A watch could not be attached or failed: from now on the tree is rescanned on a timer. */
  function fallBackToPolling(): void {
    if (closed || poll) return
    for (const watcher of folders.values()) watcher.close()
    folders.clear()
    native?.close()
    poll = setInterval(() => {
      queue = queue.then(rescan)
    }, FALLBACK_POLL_MS)
    queue = queue.then(rescan)
  }

  /** Linux: watch one directory (non-recursive); its children's names come relative to it. */
  function watchFolder(dir: string): void {
    if (!perFolder || closed || poll || folders.has(dir)) return
    try {
      const watcher = watch(join(root, dir), (_kind, name) => {
        if (name === null) return scheduleRescan() // no name: something was dropped
        onNative(dir === '' ? name : `${dir}/${name}`)
      })
      watcher.on('error', () => {
        if (dir === '') return stopQuietly()
        unwatchFolder(dir)
        if (existsSync(join(root, dir))) fallBackToPolling() // not a removal: the watch broke
      })
      folders.set(dir, watcher)
    } catch (error) {
      if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return // gone already: its delete is reported
      fallBackToPolling() // ENOSPC (the inotify watch limit), EMFILE
    }
  }

  function unwatchFolder(dir: string): void {
    folders.get(dir)?.close()
    folders.delete(dir)
  }

  /** The root vanished (sandbox destroyed): the watch ends; events simply stop. */
  function stopQuietly(): void {
    closed = true
    for (const watcher of folders.values()) watcher.close()
    folders.clear()
    native?.close()
    clearInterval(poll)
  }

  const native = perFolder
    ? undefined
    : watch(root, { recursive: true }, (_kind, filename) => {
        if (filename === null) return scheduleRescan()
        onNative(filename.split(sep).join('/'))
      })
  native?.on('error', stopQuietly)
  watchFolder('')
  // Start watching first, then seed: events wait in the queue behind the seed.
  const seeded = walk(root, '', known, ignored, watchFolder)
  queue = seeded.catch(() => undefined) // a seed failure is thrown just below instead
  try {
    await seeded
    seeding = false
  } catch (error) {
    stopQuietly()
    throw error
  }

  async function classify(path: string): Promise<void> {
    if (closed) return
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
      if (now === null) await discover(path)
      return
    }
    const before = known.get(path)
    known.set(path, now)
    if (now !== null && (now !== before || reportedEarly)) emit('change', path) // the same signature: a report for a file nobody touched
  }

  /** A new directory: watch it, then report everything already in it (made before its watch was attached). */
  async function discover(dir: string): Promise<void> {
    watchFolder(dir)
    const found = new Map<string, string | null>()
    await walk(root, dir, found, ignored, watchFolder)
    for (const [path, sig] of found) {
      if (known.has(path)) continue
      known.set(path, sig)
      emit('create', path)
    }
  }

  /** Walk the whole tree and report every difference from what is known (creates, changes, deletes). */
  async function rescan(): Promise<void> {
    if (closed) return
    const next = new Map<string, string | null>()
    try {
      await walk(root, '', next, ignored, watchFolder)
    } catch {
      return stopQuietly() // the root is gone or unreadable: nothing more to report
    }
    if (closed) return
    for (const [path, sig] of next) {
      const before = known.get(path)
      if (!known.has(path)) emit('create', path)
      else if (sig !== null && (sig !== before || early.delete(path))) emit('change', path)
    }
    const gone = [...known.keys()].filter((path) => !next.has(path)).sort().reverse()
    for (const path of gone) {
      if (known.get(path) === null) unwatchFolder(path)
      emit('delete', path)
    }
    known = next
  }

  /** Emit deletes for a vanished path and every known path below it (deepest first). */
  function forgetTree(path: string): void {
    const prefix = `${path}/`
    const below = [...known.keys()].filter((candidate) => candidate.startsWith(prefix)).sort().reverse()
    for (const candidate of [...below, path]) {
      if (known.get(candidate) === null) unwatchFolder(candidate)
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
      if (burst) clearTimeout(burst.timer)
      stopQuietly()
      await queue
    },
  }
}

/** `'<ino> <size> <mtimeNs>'` of a file or symlink (what a content change moves), `null` for a directory. */
function signature(stats: BigIntStats): string | null {
  return stats.isDirectory() ? null : `${stats.ino} ${stats.size} ${stats.mtimeNs}`
}

/**
 * Record every existing path below `dir` (skipping ignored ones) in `into`,
 * files with their signature, directories as `null` (each handed to
 * `onFolder` before it is read).
 * @throws SandboxOperationError `fs-failed` when `dir` exists but cannot be read.
 */
async function walk(root: string, dir: string, into: Map<string, string | null>, ignored: (path: string) => boolean, onFolder: (dir: string) => void): Promise<void> {
  let entries
  try {
    entries = await readdir(join(root, dir), { withFileTypes: true })
  } catch (error) {
    if (errnoCode(error) === 'ENOENT' || errnoCode(error) === 'ENOTDIR') return // removed while walking: nothing to know
    throw fsError('watch', dir || '.', error)
  }
  const subfolders: string[] = []
  for (const [index, entry] of entries.entries()) {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`
    if (ignored(path)) continue
    if (entry.isDirectory()) {
      into.set(path, null)
      subfolders.push(path)
      continue
    }
    // Synchronous on purpose (several times cheaper than a promise per file), yielding every SEED_BATCH files.
    if (index > 0 && index % SEED_BATCH === 0) await new Promise((resolve) => setImmediate(resolve))
    try {
      into.set(path, signature(lstatSync(join(root, path), { bigint: true })))
    } catch (error) {
      // Gone while walking: nothing to know. Unreadable: known, with a signature no file has, so its next report is a change.
      if (errnoCode(error) !== 'ENOENT') into.set(path, '')
    }
  }
  for (const folder of subfolders) {
    onFolder(folder)
    await walk(root, folder, into, ignored, onFolder)
  }
}

function isIgnored(path: string, ignore: readonly string[]): boolean {
  const segments = path.split('/')
  return ignore.some((entry) => (entry.includes('/') ? path === entry || path.startsWith(`${entry}/`) : segments.includes(entry)))
}
