/**
 * File events of one `chat()` run: watch the workspace while the run holds
 * its sandbox, turn each event into a hook event with lazy before/after/diff
 * against the run's baseline, hand it to core's sandbox runtime and the
 * definition's hooks, and report the run's file changes as diffs.
 * Invariant: a hook or listing failure is logged and never reaches the run.
 * Design notes: docs/design/watch.md
 */
import type { SandboxFileEvent, SandboxFileHookEvent } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxHooks } from '../definition/define-sandbox.js'
import { captureFileBaseline, type FileBaseline, type FileDiff } from './file-baseline.js'
import { watchWorkspace, type WorkspaceWatcher } from './watch-workspace.js'

/** The `CUSTOM` event with one file's working-tree diff after a run: `{ path, diff }`. */
export const FILE_CHANGED_EVENT = 'file.changed'

/** The `CUSTOM` event core emits per file event: `{ type, path, timestamp }`. */
export const SANDBOX_FILE_EVENT = 'sandbox.file'

/**
 * One file's change over a run. A file larger than `maxDiffFileBytes` (default
 * 8 MiB, `DEFAULT_MAX_DIFF_FILE_BYTES`) comes with `tooLarge: true` and its
 * `size`, and a FIFO, socket or device with `notRegular: true`: their content
 * is not read and `diff` only says why.
 */
export interface FileChange extends Omit<FileDiff, 'diff'> {
  /** Absolute path inside the sandbox. */
  readonly path: string
  /** Unified diff against the run's baseline: the workspace when this run started. */
  readonly diff: string
}

/** File events of one run, from {@link startRunFileEvents}. */
export interface RunFileEvents {
  /** Deliver every change made so far and wait until the definition hooks ran. */
  flush: () => Promise<void>
  /** Diffs of the files changed in this run that differ from what the last call reported (non-empty only); on a resumed baseline, of every file that differs from the run's start. */
  changes: () => Promise<FileChange[]>
  /**
   * Keep workspace-relative paths (a file, or a folder and everything below)
   * out of events, hooks and diffs from now on: files the harness generates
   * for itself, such as a projected MCP config holding resolved secrets.
   */
  exclude: (paths: readonly string[]) => void
  /**
   * Stop watching; with `flush`, deliver what is pending first. Waits for
   * running hooks, then removes the baseline's files, or with `keepBaseline`
   * (a durable run that detaches) leaves them for the host that takes the run
   * over. Idempotent.
   */
  stop: (options: { flush: boolean; keepBaseline?: boolean }) => Promise<void>
}

type FileHook = (event: SandboxFileHookEvent) => void | Promise<void>

/** The part of core's `SandboxRuntime` (`getSandboxRuntime(ctx)`) this uses. */
export interface FileEventSink {
  emit: (event: SandboxFileHookEvent) => void
}

const TYPED_HOOK = { create: 'onFileCreate', change: 'onFileChange', delete: 'onFileDelete' } as const

/** Longest wait, in ms, for the definition's file hooks before a flush or stop goes on without them. */
const HOOK_DRAIN_TIMEOUT_MS = 10_000

/**
 * Start watching `handle` for one run.
 *
 * @param input.runtime - Core's sandbox runtime of the run (`getSandboxRuntime(ctx)`); without it no chunks are emitted and only definition hooks fire.
 * @returns The run's {@link RunFileEvents}.
 * @throws WorkspaceWatchError `list-failed` when the workspace cannot be listed.
 */
export async function startRunFileEvents(input: {
  handle: SandboxHandle
  hooks: SandboxHooks
  runtime?: FileEventSink
  logger?: InternalLogger
  ignore?: readonly string[]
  intervalMs?: number
  /** Applied to the path the runtime streams (a secret in a file name must not travel). Default: none. */
  redactPath?: (path: string) => string
  /** The largest file read for a diff or a hook accessor, in bytes. Default `DEFAULT_MAX_DIFF_FILE_BYTES` (8 MiB). */
  maxDiffFileBytes?: number
  /** A durable run's baseline folder (`durableRunFiles(runId, journalDir).baseline`): reused when an earlier host of the run left one. Default: a temp folder. */
  baselineDir?: string
  /**
   * For a resumed baseline: the last file event type the run's log holds per
   * path (as streamed, after `redactPath`). Each file that differs from the
   * run's start and whose logged state does not say so gets its event now.
   * Default: none are sent.
   */
  loggedFileEvents?: () => Promise<ReadonlyMap<string, SandboxFileEvent['type']>>
}): Promise<RunFileEvents> {
  const { handle, hooks, runtime, logger } = input
  const redactPath = input.redactPath ?? ((path: string) => path)
  const baseline = await captureFileBaseline(handle, {
    ...(input.ignore ? { ignore: input.ignore } : {}),
    ...(input.maxDiffFileBytes !== undefined ? { maxDiffFileBytes: input.maxDiffFileBytes } : {}),
    ...(input.baselineDir !== undefined ? { snapshotDir: input.baselineDir } : {}),
  })
  const touched = new Set<string>()
  const reported = new Map<string, string>()
  const root = handle.workspaceRoot.replace(/\/+$/, '')
  const toExcluded = (path: string) => `${root}/${path.replace(/^\.?\/+|\/+$/g, '')}`
  // What an earlier host of the run kept out (the harness's projected files) stays out: this host may never project.
  const excluded: string[] = baseline.excluded.map(toExcluded)
  /** The writes of `exclude` beside a durable baseline, awaited before a listing. */
  let remembering: Promise<void> = Promise.resolve()
  const isExcluded = (path: string) => excluded.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))
  let hooksDone: Promise<void> = Promise.resolve()
  /** Wait for running hooks, but never let a hung hook hold the run. */
  async function drainHooks(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), HOOK_DRAIN_TIMEOUT_MS)))
    const outcome = await Promise.race([hooksDone, late])
    clearTimeout(timer)
    if (outcome === 'late') logger?.errors(`sandbox file hooks of sandbox ${handle.id} still running after ${HOOK_DRAIN_TIMEOUT_MS} ms; the run goes on without waiting`)
  }

  function onEvent(event: SandboxFileEvent): void {
    if (isExcluded(event.path)) return
    touched.add(event.path)
    const hookEvent = toHookEvent(event, baseline)
    logger?.sandbox(`dispatch file ${event.type} ${event.path}`)
    try {
      // The streamed event carries a redacted path; its accessors still read the real file.
      runtime?.emit({ ...hookEvent, path: redactPath(event.path) })
    } catch (error) {
      logger?.errors('sandbox runtime emit failed', { error })
    }
    hooksDone = hooksDone.then(() => callFileHooks(hooks, hookEvent, logger))
  }

  let watcher: WorkspaceWatcher
  try {
    watcher = await watchWorkspace(handle, {
      onEvent,
      ...(input.ignore ? { ignore: input.ignore } : {}),
      ...(input.intervalMs ? { intervalMs: input.intervalMs } : {}),
      ...(logger ? { logger } : {}),
    })
  } catch (error) {
    await baseline.dispose()
    throw error
  }
  const recorded = baseline.snapshot ? `${baseline.resumed ? 'the run\'s start, ' : ''}snapshot ${baseline.snapshot}` : baseline.commit ? `commit ${baseline.commit} (no snapshot: git could not record the start)` : '(nothing recorded: no git in the sandbox)'
  logger?.sandbox(`file events for sandbox ${handle.id}: ${watcher.mode} watcher, baseline ${recorded}`)
  if (baseline.resumed && input.loggedFileEvents) await catchUp(input.loggedFileEvents)

  /** The events of writes no host watched (between two hosts of the run): what differs from the start and the log does not show. */
  async function catchUp(logged: () => Promise<ReadonlyMap<string, SandboxFileEvent['type']>>): Promise<void> {
    try {
      const [events, files] = await Promise.all([logged(), baseline.changedFiles()])
      // Reconciled after the listing: a write this host's watcher reports (also one made while the listing ran, which
      // the listing may show too) is its own event, so it is sent once, not also as a catch-up.
      await watcher.flush()
      for (const { path, type } of files) {
        if (isExcluded(path) || touched.has(path)) continue
        const last = events.get(redactPath(path))
        const shown = type === 'delete' ? last === 'delete' : last === 'create' || last === 'change'
        if (!shown) onEvent({ type, path, timestamp: Date.now() })
      }
    } catch (error) {
      logger?.errors(`sending the file events of sandbox ${handle.id} that the run's log lacks failed; the file tree may miss writes made before the takeover`, { error })
    }
  }

  let stopping: Promise<void> | undefined
  return {
    async flush() {
      await watcher.flush()
      await drainHooks()
    },
    exclude(paths) {
      for (const path of paths) excluded.push(toExcluded(path))
      remembering = remembering.then(() => baseline.rememberExcluded(paths))
    },
    async changes() {
      await remembering
      // A resumed baseline: this host's watcher saw only what changed since it took over; the rest is in the listing.
      const listed = baseline.resumed
        ? (
            await baseline.changedFiles().catch((error: unknown) => {
              logger?.errors(`listing the files changed since the start of the run in sandbox ${handle.id} failed; reporting only those changed since the takeover`, { error })
              return []
            })
          ).map((file) => file.path)
        : []
      const paths = [...new Set([...touched, ...listed])].filter((path) => !isExcluded(path)).sort()
      if (paths.length === 0) return []
      let diffs: Map<string, FileDiff>
      try {
        diffs = await baseline.diffs(paths)
      } catch (error) {
        logger?.errors(`diffing the run's changed files in sandbox ${handle.id} failed`, { error })
        return []
      }
      const out: FileChange[] = []
      for (const path of paths) {
        const entry = diffs.get(path) ?? { diff: '' }
        if (entry.diff === (reported.get(path) ?? '')) continue
        reported.set(path, entry.diff)
        if (entry.diff !== '') out.push({ path, ...entry })
      }
      return out
    },
    stop({ flush, keepBaseline = false }) {
      stopping ??= (async () => {
        if (flush) await watcher.flush()
        await watcher.stop()
        await drainHooks()
        await remembering
        await baseline.dispose({ keep: keepBaseline })
      })()
      return stopping
    },
  }
}

/** The hook event: the serializable event plus accessors that compute on first call. */
function toHookEvent(event: SandboxFileEvent, baseline: FileBaseline): SandboxFileHookEvent {
  const once = <T>(compute: () => Promise<T>) => {
    let value: Promise<T> | undefined
    return () => (value ??= compute())
  }
  return {
    type: event.type,
    path: event.path,
    timestamp: event.timestamp,
    before: once(() => baseline.before(event.path)),
    after: once(() => (event.type === 'delete' ? Promise.resolve('') : baseline.after(event.path))),
    diff: once(async () => (await baseline.diff([event.path])).get(event.path) ?? ''),
  }
}

/** The definition's catch-all hook, then the typed one; a throw is logged. */
async function callFileHooks(hooks: SandboxHooks, event: SandboxFileHookEvent, logger: InternalLogger | undefined): Promise<void> {
  for (const name of ['onFile', TYPED_HOOK[event.type]] as const) {
    const hook = hooks[name] as FileHook | undefined
    if (!hook) continue
    try {
      await hook(event)
    } catch (error) {
      logger?.errors(`sandbox hook ${name} threw for ${event.type} ${event.path}`, { error })
    }
  }
}
