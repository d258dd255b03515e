/**
 * The native side of `watchWorkspace`: the provider's `fs.watch`, events
 * coalesced per path until quiet for {@link NATIVE_COALESCE_MS} (at most
 * {@link NATIVE_MAX_DELAY_MS}), verified against the filesystem and handled
 * one at a time; a burst over {@link NATIVE_BURST_PATHS} paths is settled by
 * one `onBurst` listing reconcile. Design notes: docs/design/watch.md
 * Invariant: after `close()` resolves, `onSettled` is never called again.
 */
import type { SandboxFileStat, SandboxWatcher, SandboxWatchEvent } from '../contracts/fs.js'
import type { SandboxHandle } from '../contracts/handle.js'
import { listedStat } from './listing.js'

/** Quiet time, in ms, after which a path's native events are settled. */
export const NATIVE_COALESCE_MS = 50

/** Longest delay, in ms, from a path's first native event to settling it (a file written continuously still reports). */
export const NATIVE_MAX_DELAY_MS = 500

/** Pending paths above which a burst is settled by one reconcile (`onBurst`) instead of a check per path. */
export const NATIVE_BURST_PATHS = 256

/** What a settled path is now. */
export type PathKind = 'file' | 'directory' | 'none'

/** A running native watch. */
export interface NativeWatch {
  /** Settle every pending path now and wait until they were handled. */
  settleNow: () => Promise<void>
  /** Stop the provider's watcher and drop pending paths; waits for the one being handled. */
  close: () => Promise<void>
}

interface Pending {
  readonly firstAt: number
  /** The latest native event type of this burst. */
  readonly lastType: SandboxWatchEvent['type']
  /** When the first event of this burst was observed (epoch ms). */
  readonly timestamp: number
  timer: ReturnType<typeof setTimeout>
}

/**
 * Start the provider's watcher.
 *
 * @param input.onSettled - Called per settled workspace-relative path with when its burst began and its last native event type.
 * @param input.onBurst - Called once a burst of more than {@link NATIVE_BURST_PATHS} pending paths is quiet, instead of `onSettled` for each: reconcile against a listing.
 * @returns The watch, or `null` when `fs.watch` is missing or fails to start (`onError` says why).
 */
export async function startNativeWatch(
  handle: SandboxHandle,
  input: { ignore: readonly string[]; onSettled: (path: string, timestamp: number, lastType: SandboxWatchEvent['type']) => Promise<void>; onBurst: () => Promise<void>; onError: (message: string, error: unknown) => void },
): Promise<NativeWatch | null> {
  if (!handle.fs.watch) return null
  const pending = new Map<string, Pending>()
  let chain: Promise<void> = Promise.resolve()
  let closed = false
  /** A burst waiting to be reconciled: when it began, and the quiet timer. */
  let burst: { firstAt: number; timer: ReturnType<typeof setTimeout> } | undefined

  const reconcileBurst = () => {
    if (!burst || closed) return
    clearTimeout(burst.timer)
    burst = undefined
    chain = chain.then(() => (closed ? undefined : input.onBurst())).catch((error: unknown) => input.onError('reconciling a burst of native events failed', error))
  }
  /** Drop the per-path timers and settle everything pending, and all that follows until quiet, with one reconcile. */
  const armBurst = (now: number) => {
    for (const entry of pending.values()) clearTimeout(entry.timer)
    pending.clear()
    const firstAt = burst?.firstAt ?? now
    if (burst) clearTimeout(burst.timer)
    const timer = setTimeout(reconcileBurst, Math.max(0, Math.min(NATIVE_COALESCE_MS, firstAt + NATIVE_MAX_DELAY_MS - now)))
    timer.unref?.()
    burst = { firstAt, timer }
  }

  const settle = (path: string) => {
    const entry = pending.get(path)
    if (!entry || closed) return
    clearTimeout(entry.timer)
    pending.delete(path)
    chain = chain.then(() => (closed ? undefined : input.onSettled(path, entry.timestamp, entry.lastType))).catch((error: unknown) => input.onError(`handling native events for ${path} failed`, error))
  }

  let watcher: SandboxWatcher
  try {
    watcher = await handle.fs.watch(
      (event) => {
        if (closed) return
        const now = Date.now()
        if (burst || pending.size >= NATIVE_BURST_PATHS) return armBurst(now)
        const previous = pending.get(event.path)
        if (previous) clearTimeout(previous.timer)
        const firstAt = previous?.firstAt ?? now
        const timer = setTimeout(() => settle(event.path), Math.max(0, Math.min(NATIVE_COALESCE_MS, firstAt + NATIVE_MAX_DELAY_MS - now)))
        timer.unref?.()
        pending.set(event.path, { firstAt, lastType: event.type, timestamp: previous?.timestamp ?? event.timestamp, timer })
      },
      { ignore: input.ignore },
    )
  } catch (error) {
    input.onError(`native fs.watch of sandbox ${handle.id} failed to start (${(error as Error).message}); polling instead`, error)
    return null
  }

  return {
    async settleNow() {
      for (const path of [...pending.keys()]) settle(path)
      reconcileBurst()
      await chain
    },
    async close() {
      closed = true
      if (burst) clearTimeout(burst.timer)
      for (const entry of pending.values()) clearTimeout(entry.timer)
      pending.clear()
      await watcher.close()
      await chain
    },
  }
}

/** What `path` is now: a file (or symlink), a directory, or gone, with its `lstat` when the provider has one. */
export interface PathNow {
  readonly kind: PathKind
  /** `null` without `fs.lstat` (then `kind` is the fallback) or when gone. */
  readonly stat: SandboxFileStat | null
}

/** What `path` is now. Without `fs.lstat`, `fallback` and no stat. */
export async function describePath(handle: SandboxHandle, path: string, fallback: PathKind): Promise<PathNow> {
  if (!handle.fs.lstat) return { kind: fallback, stat: null }
  try {
    const stat = await handle.fs.lstat(path)
    return { kind: stat.type === 'directory' ? 'directory' : 'file', stat }
  } catch {
    return { kind: 'none', stat: null } // not there (or not readable): it reads as gone, and a later event or flush corrects it
  }
}

/** The part of an `lstat` that a content change moves: `'<type> <size> <mtimeMs>'`. */
export function statSignature(stat: SandboxFileStat): string {
  return `${stat.type} ${stat.size} ${stat.mtimeMs}`
}

/**
 * Whether a file whose `lstat` is `stat` is unchanged since subscribers last
 * heard of it: against the {@link statSignature} recorded with its last
 * native event (`seen`), else against its listing signature (`listed`) by
 * size and mtime. Unknown (no `seen`, no listing signature) reads as changed.
 * Like the poll, a rewrite that keeps size and mtime (same clock tick) reads
 * as unchanged.
 */
export function unchangedSince(stat: SandboxFileStat, seen: string | undefined, listed: string | null | undefined): boolean {
  if (seen !== undefined) return seen === statSignature(stat)
  const before = typeof listed === 'string' ? listedStat(listed) : null
  // 2 µs: the two sides round nanoseconds to a double of epoch ms differently (about 0.25 µs apart at most).
  return before !== null && stat.type !== 'directory' && before.size === stat.size && Math.abs(before.mtimeMs - stat.mtimeMs) < 0.002
}
