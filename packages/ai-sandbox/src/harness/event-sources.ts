/**
 * Where a harness turn's CLI events come from and how its CLI is let go: its
 * NDJSON stdout (piped, or through the run journal), an attaching run's
 * existing journal, the quiet wait after a final event, and the drain that
 * gives a CLI its grace period before it is stopped.
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { readJournalNdjson } from '../journal/journaled-spawn.js'
import type { JournalOptions } from '../journal/journal-options.js'
import type { HarnessEventSource, HarnessExit, HarnessLaunch } from './harness-launch.js'
import { spawnNdjson } from './spawn-ndjson.js'

/**
 * Read NDJSON from the CLI's stdout; the job is stopped when the CLI exits, so
 * nothing it left running survives the run. Journaled: the CLI's stdout goes
 * to the run journal and is read back from there (`spawnNdjson`'s `journal`).
 */
export function ndjsonSource(handle: SandboxHandle, launch: Extract<HarnessLaunch, { command: string }>, signal: AbortSignal, onNonJson: (line: string) => void, maxLineBytes: number, journaled?: { journal: JournalOptions; agentEnv: Record<string, string> }): HarnessEventSource {
  let exit: HarnessExit | undefined
  const events = spawnNdjson(handle, launch.command, {
    ...(journaled ?? {}),
    cwd: launch.cwd,
    env: launch.env,
    ...(launch.stdin !== undefined ? { stdin: launch.stdin } : {}),
    signal,
    stopJobOnExit: true,
    maxLineBytes,
    onNonJsonLine: onNonJson,
    onExit: (result) => {
      exit = result
    },
  })
  return { events, exit: () => exit }
}

/**
 * An attaching run's events: the existing journal from byte 0 (the preflight
 * in `durableHarnessRun` found it), never a second CLI.
 */
export function attachSource(handle: SandboxHandle, journal: JournalOptions, signal: AbortSignal, onNonJson: (line: string) => void, maxLineBytes: number): HarnessEventSource {
  let exit: HarnessExit | undefined
  const events = (async function* () {
    if (signal.aborted) return
    yield* readJournalNdjson(handle, { journal, signal, maxLineBytes, onNonJsonLine: onNonJson, onExit: (result) => void (exit = result) })
  })()
  return { events, exit: () => exit }
}

/** What {@link quietFor} resolves to when nothing came in time. */
export const QUIET = Symbol('quiet')

/** `next`, or {@link QUIET} when it has not settled within `ms`; `next` itself is left running. */
export async function quietFor<T>(next: Promise<T>, ms: number): Promise<T | typeof QUIET> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([next, new Promise<typeof QUIET>((resolve) => (timer = setTimeout(() => resolve(QUIET), Math.max(0, ms))))])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Drain what the CLI still prints after the final event that ended the run
 * (dropped, and counted in the log); stop it after `graceMs`. `pending` is a
 * read already under way. Never rejects.
 */
export async function settle(pending: Promise<IteratorResult<unknown>> | undefined, it: AsyncIterator<unknown>, stop: AbortController, graceMs: number, log: (message: string) => void): Promise<void> {
  const timer = setTimeout(() => {
    log(`the CLI did not exit within its grace period after its final event; stopping its process group`)
    stop.abort()
  }, Math.max(0, graceMs))
  let dropped = 0
  try {
    for (;;) {
      const next = await (pending ?? it.next())
      pending = undefined
      if (next.done) break
      if (!stop.signal.aborted) dropped++
    }
  } catch (error) {
    log(`reading the CLI after its final event failed: ${String(error)}`)
  } finally {
    clearTimeout(timer)
    stop.abort()
    if (dropped > 0) log(`the CLI printed ${dropped} more event(s) after the final event that ended the run; they were dropped`)
  }
}
