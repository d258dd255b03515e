/**
 * A run's file events and changes: start the watcher for the run (with a
 * durable run's baseline kept under its id, so a successor diffs against the
 * run's start), and at the run's end emit one `file.changed` per changed file
 * through the runtime's queue, behind the `sandbox.file` chunks still in it.
 */
import type { ChatMiddlewareContext, SandboxFileEvent, StreamChunk } from '@tanstack/ai'
import { getSandboxRuntime } from '@tanstack/ai/adapter-internals'
import type { SandboxDefinition } from '../definition/define-sandbox.js'
import { FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT, startRunFileEvents, type FileEventSink, type RunFileEvents } from '../watch/run-file-events.js'
import type { RunState } from './run-state.js'

/** Core's name for a per-file diff chunk queued through the sandbox runtime. */
export const FILE_DIFF_EVENT = 'sandbox.file.diff'

/**
 * Emit `file.changed` for the run's changed files. Each goes out through the
 * runtime's file-diff queue, behind the `sandbox.file` chunks still queued
 * there, and is renamed from `sandbox.file.diff` when it passes `onChunk`;
 * `ctx.emitCustomEvent` would overtake them.
 */
export async function reportFileChanges(ctx: ChatMiddlewareContext, state: RunState): Promise<void> {
  if (!state.files) return
  await state.files.flush()
  const runtime = getSandboxRuntime(ctx, { optional: true })
  // A takeover whose predecessor stored some of the run's diffs before it died sends only the rest.
  const stored = state.durable?.run.attach ? await storedFileChanges(state.durable.run.log).catch(() => new Set<string>()) : undefined
  for (const { path, diff, ...flags } of await state.files.changes()) {
    // The stream reaches clients and event logs: no workspace secret value, raw or encoded, travels in a diff.
    // `flags`: `tooLarge`/`size` or `notRegular` when the content was not read (see FileChange).
    const change = { path: state.scrubber.text(path), diff: state.scrubber.text(diff), ...flags }
    if (stored?.has(change.path)) continue
    if (!runtime) {
      ctx.emitCustomEvent(FILE_CHANGED_EVENT, change)
      continue
    }
    state.fileDiffs.add(change)
    runtime.emitFileDiff(change)
  }
}

/**
 * Start the run's file events; a failure to start is logged and the run goes
 * on without them. Each event handed to core's runtime (which queues its
 * `sandbox.file` chunk) also ticks the run's chunks, so core drains the queue now.
 */
export async function startFileEvents(sandbox: SandboxDefinition, ctx: ChatMiddlewareContext, state: RunState): Promise<RunFileEvents | undefined> {
  const { handle, logger } = state
  const runtime = getSandboxRuntime(ctx, { optional: true })
  const sink: FileEventSink | undefined = runtime && {
    emit: (event) => {
      runtime.emit(event)
      state.chunks.tick()
    },
  }
  try {
    // A durable run's baseline is kept under its run id: a host that takes the run over diffs against the run's start.
    const baselineDir = state.journalFiles?.baseline
    // An attach also sends the file events of writes no host watched, those the run's log lacks.
    const log = state.durable?.run.attach ? state.durable.run.log : undefined
    return await startRunFileEvents({
      handle,
      hooks: sandbox.hooks,
      redactPath: state.scrubber.text,
      ...(sink ? { runtime: sink } : {}),
      ...(logger ? { logger } : {}),
      ...(baselineDir ? { baselineDir } : {}),
      ...(log ? { loggedFileEvents: async () => lastFileEvents(await log.snapshot()) } : {}),
    })
  } catch (error) {
    logger?.errors(`withSandbox: file events for sandbox ${handle.id} could not start; the run goes on without them`, { error })
    return undefined
  }
}

/** The paths of the `file.changed` events a run's stored log holds. */
async function storedFileChanges(log: { snapshot: () => Promise<ReadonlyArray<{ chunk: StreamChunk }>> }): Promise<Set<string>> {
  const paths = new Set<string>()
  for (const { chunk } of await log.snapshot()) {
    const path = chunk.type === 'CUSTOM' && chunk.name === FILE_CHANGED_EVENT ? (chunk.value as { path?: unknown } | undefined)?.path : undefined
    if (typeof path === 'string') paths.add(path)
  }
  return paths
}

/** The last `sandbox.file` event type per path in a run's stored log. */
function lastFileEvents(entries: ReadonlyArray<{ chunk: StreamChunk }>): Map<string, SandboxFileEvent['type']> {
  const last = new Map<string, SandboxFileEvent['type']>()
  for (const { chunk } of entries) {
    if (chunk.type !== 'CUSTOM' || chunk.name !== SANDBOX_FILE_EVENT) continue
    const value = chunk.value as Partial<SandboxFileEvent> | undefined
    if (typeof value?.path === 'string' && (value.type === 'create' || value.type === 'change' || value.type === 'delete')) last.set(value.path, value.type)
  }
  return last
}
