/**
 * `watchWorkspace`: create/change/delete events of a sandbox workspace, from
 * the native watcher (`native.ts`) with `fs.watch`, else a listing poll
 * through `exec` (`listing.ts`); `flush()` reconciles against a fresh listing.
 * Invariant: a consistent story per path (no `change` before `create`, no
 * double `delete`), every path normalised and strictly inside the workspace
 * root, and no event after `stop()` resolves. Design notes: docs/design/watch.md
 */
import { posix } from 'node:path'
import type { SandboxFileEvent } from '@tanstack/ai'
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import { MAX_TIMER_MS } from '../definition/long-timeout.js'
import { parseOptions } from '../contracts/validate.js'
import { diffListings, listWorkspace, type ListingSkip, type WorkspaceListing } from './listing.js'
import { describePath, startNativeWatch, statSignature, unchangedSince } from './native.js'

/** Entries ignored when `ignore` is not given. */
export const DEFAULT_WATCH_IGNORE: readonly string[] = Object.freeze(['.git', 'node_modules'])

/** Default poll interval in ms for providers without a native watcher. */
export const DEFAULT_WATCH_INTERVAL_MS = 500

/** How long `flush()` lets a native watcher deliver what the provider already queued, in ms. */
const NATIVE_SETTLE_MS = 30

/** The logger `watchWorkspace` writes to (`chat()`'s internal logger fits). */
export interface WatchLogger {
  sandbox: (message: string, meta?: Record<string, unknown>) => void
}

/** Options of {@link watchWorkspace}. */
export interface WatchWorkspaceOptions {
  /** Called once per event, in order. `path` is absolute inside the sandbox, normalised and strictly under `handle.workspaceRoot`. A throw is logged, never fatal. */
  onEvent: (event: SandboxFileEvent) => void
  /** Names pruned at any depth, or workspace-relative paths when they contain `/`. Default `['.git', 'node_modules']`; a list replaces it. */
  ignore?: readonly string[]
  /** Poll interval in ms when the provider has no native watcher (min 50, max 2^31-1, the longest `setTimeout` delay). Default 500. */
  intervalMs?: number
  /** Logs start, stop, failures and what is left out (a name that is not UTF-8, a path outside the root, a native event for an unchanged file) under the `sandbox` debug category. */
  logger?: WatchLogger
}

/** A running watch. */
export interface WorkspaceWatcher {
  /** `'native'` (the provider's `fs.watch`) or `'poll'` (listing through `exec`). */
  readonly mode: 'native' | 'poll'
  /** Deliver every change made before the call (one listing), then resolve. */
  flush: () => Promise<void>
  /** Stop watching. Resolves once no event can fire any more. Idempotent. */
  stop: () => Promise<void>
}

const optionsSchema = z
  .object({
    onEvent: z.custom<WatchWorkspaceOptions['onEvent']>((v) => typeof v === 'function', { message: 'expected a function (event) => void' }),
    ignore: z.array(z.string().min(1, 'expected a non-empty name or path')).optional(),
    intervalMs: z.number().min(50, 'expected at least 50 ms').max(MAX_TIMER_MS, `expected at most ${MAX_TIMER_MS} ms (2^31-1, the longest delay setTimeout can hold)`).optional(),
    logger: z.custom<WatchLogger>((v) => typeof v === 'object' && v !== null && typeof (v as WatchLogger).sandbox === 'function', { message: 'expected a logger with a sandbox(message) method' }).optional(),
  })
  .strict()

/**
 * Watch a sandbox workspace for file create/change/delete (directories are
 * not reported). Native `fs.watch` when the handle has it, else a poll of
 * `find` + `stat` every `intervalMs` that works with GNU and BusyBox tools.
 *
 * @param handle - A live sandbox.
 * @param options - `onEvent`, and optional `ignore`, `intervalMs`, `logger`.
 * @returns A {@link WorkspaceWatcher}; events start after it resolves.
 * @throws SandboxConfigError for invalid options.
 * @throws WorkspaceWatchError `list-failed` when the workspace cannot be listed.
 * @example
 * ```ts
 * const watcher = await watchWorkspace(handle, {
 *   onEvent: (e) => console.log(e.type, e.path),
 *   ignore: ['.git', 'node_modules'], // default
 * })
 * await watcher.stop()
 * ```
 */
export async function watchWorkspace(handle: SandboxHandle, options: WatchWorkspaceOptions): Promise<WorkspaceWatcher> {
  const { onEvent, ignore = DEFAULT_WATCH_IGNORE, intervalMs = DEFAULT_WATCH_INTERVAL_MS, logger } = parseOptions(optionsSchema, options, 'watchWorkspace') as WatchWorkspaceOptions
  const root = posix.normalize(handle.workspaceRoot).replace(/\/+$/, '')
  const abort = new AbortController()
  let stopped = false
  const skipped = new Set<string>()
  /** A name the listing leaves out is logged once per watch, not on every poll. */
  const onSkip: ListingSkip = (name, why) => {
    if (skipped.has(name)) return
    skipped.add(name)
    logger?.sandbox(`watchWorkspace leaves out ${JSON.stringify(name)} in sandbox ${handle.id}: ${why === 'not-utf8' ? 'its name is not UTF-8' : 'not a plain workspace path'}`)
  }
  /** What subscribers were told exists: path to its listing signature, `null` when a native event reported it. */
  let present = new Map<string, string | null>(await listWorkspace(handle, ignore, { onSkip }))
  /** The `lstat` signature of a path as its last delivered native event found it. */
  const seen = new Map<string, string>()
  /** Listing work runs one at a time. */
  let queue: Promise<void> = Promise.resolve()

  function deliver(type: SandboxFileEvent['type'], path: string, timestamp: number): void {
    if (stopped) return
    const relative = plainRelative(path)
    if (relative === null) {
      logger?.sandbox(`watchWorkspace dropped ${type} ${JSON.stringify(path)} of sandbox ${handle.id}: not inside the workspace root ${root}`)
      return
    }
    try {
      onEvent({ type, path: `${root}/${relative}`, timestamp })
    } catch (error) {
      logger?.sandbox(`watchWorkspace onEvent threw for ${type} ${path}`, { error })
    }
  }

  function reconcile(next: WorkspaceListing): void {
    const now = Date.now()
    for (const change of diffListings(present, next)) {
      seen.delete(change.path) // the listing signature is now the newer one
      deliver(change.type, change.path, now)
    }
    present = new Map(next)
  }

  /** Queue one listing and reconcile with it; a failure is logged, not thrown. */
  function pass(why: string): Promise<void> {
    queue = queue.then(async () => {
      if (stopped) return
      try {
        reconcile(await listWorkspace(handle, ignore, { signal: abort.signal, onSkip }))
      } catch (error) {
        if (!stopped) logger?.sandbox(`watchWorkspace ${why} failed for sandbox ${handle.id}: ${(error as Error).message}`, { error })
      }
    })
    return queue
  }

  const native = await startNativeWatch(handle, { ignore, onSettled, onBurst: () => pass('native burst'), onError: (message, error) => logger?.sandbox(`watchWorkspace: ${message}`, { error }) })
  const mode = native ? 'native' : 'poll'
  let timer: ReturnType<typeof setTimeout> | undefined
  const schedule = () => {
    if (stopped || native) return
    timer = setTimeout(() => void pass('poll').then(schedule), intervalMs)
    timer.unref?.()
  }
  schedule()
  logger?.sandbox(`watching ${root} of sandbox ${handle.id} (${mode}${mode === 'poll' ? ` every ${intervalMs} ms` : ''}; ignore ${ignore.join(', ') || 'nothing'}; files: ${present.size})`)

  /** A settled native path: report what changed against what subscribers were told, checked against the filesystem. */
  async function onSettled(reported: string, timestamp: number, lastType: SandboxFileEvent['type']): Promise<void> {
    const path = plainRelative(reported)
    if (path === null) return deliver(lastType, reported, timestamp) // logged and dropped there
    const now = await describePath(handle, path, lastType === 'delete' ? 'none' : 'file')
    if (stopped || now.kind === 'directory') return
    if (now.kind === 'none') {
      seen.delete(path)
      if (present.delete(path)) deliver('delete', path, timestamp)
      return // never reported: a temp file that came and went
    }
    const known = present.has(path)
    // A change, a delete of a file still there or a create of a known one, while the file is as it was: nobody touched it.
    if (known && now.stat && unchangedSince(now.stat, seen.get(path), present.get(path))) {
      logger?.sandbox(`watchWorkspace dropped a native ${lastType} for ${JSON.stringify(path)} of sandbox ${handle.id}: the file did not change`)
      return
    }
    present.set(path, null)
    if (now.stat) seen.set(path, statSignature(now.stat))
    deliver(known ? 'change' : 'create', path, timestamp)
  }

  let stopping: Promise<void> | undefined
  return {
    mode,
    async flush() {
      if (stopped) return
      if (native) {
        await new Promise((resolve) => setTimeout(resolve, NATIVE_SETTLE_MS))
        await native.settleNow()
      }
      await pass('flush')
    },
    stop() {
      stopping ??= (async () => {
        stopped = true
        clearTimeout(timer)
        abort.abort()
        await native?.close().catch((error: unknown) => logger?.sandbox(`closing the native watcher of sandbox ${handle.id} failed`, { error }))
        await queue
        logger?.sandbox(`stopped watching ${root} of sandbox ${handle.id}`)
      })()
      return stopping
    },
  }
}

/** `path` normalised as a workspace-relative path, or `null` when it is empty, absolute or leaves the root. */
function plainRelative(path: string): string | null {
  if (path === '' || path.startsWith('/') || path.includes('\0')) return null
  const normal = posix.normalize(path).replace(/\/+$/, '')
  return normal === '.' || normal === '..' || normal.startsWith('../') ? null : normal
}
