/**
 * The shared state of one journal conformance run: the provider, the reading
 * strategy its capabilities select, the journal folder, and the tracker of
 * the runs and sandboxes a case makes. Invariant: after every case (even a
 * failing one) each run's journal files are deleted; the sandbox is destroyed
 * too unless the caller keeps it for the next case (the runner keeps it
 * after a passing case); a failing `destroy` fails the run. Also owns the small shell
 * helpers the cases share (agent scripts, marker files, counting `tail`s).
 */
import { randomUUID } from 'node:crypto'
import { expect } from 'vitest'
import type { SandboxCapabilities } from '../../contracts/capabilities.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { SandboxProvider } from '../../contracts/provider.js'
import { journalReadCommand, parseJournalRead } from '../../journal/bounded-read.js'
import { journalCleanupCommand, journalExitProbeCommand, journalPaths, parseJournalExit, type JournalPaths } from '../../journal/commands.js'
import { readJournal, journalReadStrategy, type JournalReadStrategy, type ReadJournalOptions } from '../../journal/reader.js'
import { decodeBase64Stream, type JournalLine } from '../../journal/bytes.js'
import { shellQuote } from '../../shell/quote.js'
import { createProviderConformanceContext, type ProviderConformanceContext } from '../provider/context.js'

/** One journaled run of a case: its sandbox, id and paths. */
export interface JournalRun {
  readonly handle: SandboxHandle
  readonly runId: string
  readonly paths: JournalPaths
}

/** What every journal case reads. */
export interface JournalConformanceContext {
  readonly provider: SandboxProvider
  readonly capabilities: SandboxCapabilities
  /** What `readJournal` picks on this provider. */
  readonly strategy: JournalReadStrategy
  /** The journal folder inside the sandbox. */
  readonly dir: string
  /** Per-case timeout, ms. */
  readonly timeoutMs: number
  /** The sandbox of the current case (created on first use; destroyed by `cleanup()` unless it is kept for the next case). */
  sandbox: () => Promise<SandboxHandle>
  /** A fresh run (unique id unless `runId` is given) in the case's sandbox, cleaned up after the case. */
  newRun: (label: string, runId?: string) => Promise<JournalRun>
  /**
   * Delete every run's journal, then destroy the sandbox, or with
   * `{ keepSandbox: true }` keep it for the next case (every case uses run ids,
   * markers and journal paths of its own, so cases can share one sandbox; a
   * container provider then starts one container per suite instead of one per
   * case). Default: destroy.
   */
  cleanup: (options?: { keepSandbox?: boolean }) => Promise<void>
}

/**
 * Build the context of a journal conformance run; reads the provider's
 * capabilities once. Call `cleanup()` after each case (the runner does).
 *
 * @param provider - The provider under test.
 * @param options - `dir`: absolute journal folder inside the sandbox; `timeoutMs`: per case, ms.
 * @example
 * ```ts
 * const context = await createJournalConformanceContext(myProvider(), { dir: '/tmp/tanstack-runs', timeoutMs: 30_000 })
 * try { await checkJournalForgedSentinel(context) } finally { await context.cleanup() }
 * ```
 */
export async function createJournalConformanceContext(provider: SandboxProvider, options: { dir: string; timeoutMs: number }): Promise<JournalConformanceContext> {
  const base: ProviderConformanceContext = await createProviderConformanceContext(provider, { timeoutMs: options.timeoutMs, probeTools: false })
  let current: Promise<SandboxHandle> | undefined
  const runs: JournalRun[] = []
  const context: JournalConformanceContext = {
    provider,
    capabilities: base.capabilities,
    strategy: journalReadStrategy(base.capabilities),
    dir: options.dir,
    timeoutMs: options.timeoutMs,
    sandbox: () => (current ??= base.create({ labels: { purpose: 'journal-conformance' } })),
    newRun: async (label, runId = `journal-conformance-${label}-${randomUUID()}`) => {
      const handle = await context.sandbox()
      const run = { handle, runId, paths: journalPaths(runId, options.dir) }
      runs.push(run)
      return run
    },
    cleanup: async ({ keepSandbox = false } = {}) => {
      const pending = runs.splice(0)
      const failures: string[] = []
      for (const run of pending) {
        try {
          await run.handle.process.exec(`${journalCleanupCommand(run.paths)}; rm -f ${shellQuote(run.paths.journal)}.stdin-*`)
        } catch (error) {
          failures.push(`${run.paths.journal}: ${error instanceof Error ? error.message : String(error)}`)
        }
      }
      if (!keepSandbox) {
        current = undefined
        await base.destroyTracked()
      }
      expect(failures, 'deleting the journals of the case must work (they would be left in the journal folder)').toEqual([])
    },
  }
  return context
}

/** A shell function `w FILE`: wait until FILE exists (a marker the case writes), giving up with exit 98 after 20 s so no agent outlives a failed case for long. */
export const WAIT_FOR_MARKER = 'w() { i=0; while [ ! -f "$1" ]; do i=$((i+1)); if [ $i -gt 400 ]; then exit 98; fi; sleep 0.05; done; }; '

/** Create marker files in the sandbox's working folder. */
export async function writeMarker(handle: SandboxHandle, ...names: string[]): Promise<void> {
  const result = await handle.process.exec(`touch ${names.map(shellQuote).join(' ')}`)
  expect(result.exitCode, `touch ${names.join(' ')} in the sandbox's working folder: ${result.stderr}`).toBe(0)
}

/** A marker name unique to a run (markers live in the sandbox's working folder). */
export function markerName(run: JournalRun, what: string): string {
  return `journal-marker-${run.runId.slice(-12)}-${what}`
}

/** The whole journal's bytes, read with the bounded read command. */
export async function rawJournal(run: JournalRun): Promise<Buffer> {
  const result = await run.handle.process.exec(journalReadCommand(run.paths, 0, 64 * 1024 * 1024))
  expect(result.exitCode, `journalReadCommand exits 0: ${result.stderr}`).toBe(0)
  const read = parseJournalRead(result)
  expect(read.size, `the journal ${run.paths.journal} exists`).toBeDefined()
  // The frame alone, through the spec's decoder, gives the same bytes: stdout carries nothing else.
  const framed: Uint8Array[] = []
  for await (const bytes of decodeBase64Stream(oneChunk(result.stdout))) framed.push(bytes)
  expect(Buffer.concat(framed).equals(read.bytes), "journalReadCommand's stdout is one base64 frame of the bytes read (decodeBase64Stream)").toBe(true)
  return read.bytes
}

/** One string as a stream, the way a bounded read's whole stdout arrives. */
async function* oneChunk(text: string): AsyncIterable<string> {
  yield text
}

/** Exit status of a command (e.g. `journalExistsCommand`). */
export async function statusOf(handle: SandboxHandle, command: string): Promise<number> {
  return (await handle.process.exec(command)).exitCode
}

/** Wait (bounded) until the run's exit probe reports a genuine sentinel; returns its exit code. */
export async function waitForExit(run: JournalRun, timeoutMs = 15_000): Promise<number> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const state = parseJournalExit((await run.handle.process.exec(journalExitProbeCommand(run.paths))).stdout)
    if (state.state === 'exited') return state.exitCode
    if (Date.now() > until) expect.unreachable(`the agent of ${run.runId} did not write its exit sentinel within ${timeoutMs} ms (probe: ${state.state})`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Read the journal to its sentinel with `readJournal`; the lines and the exit code (undefined when the read ended without one). */
export async function readAll(run: JournalRun, options: Omit<ReadJournalOptions, 'paths' | 'runId' | 'onExit'> = {}): Promise<{ lines: JournalLine[]; exitCode: number | undefined }> {
  const lines: JournalLine[] = []
  let exitCode: number | undefined
  for await (const line of readJournal(run.handle, { ...options, paths: run.paths, onExit: (exit) => (exitCode = exit.exitCode) })) lines.push(line)
  return { lines, exitCode }
}

/** A process of the sandbox: its pid and command line. */
export interface SandboxProcessInfo {
  readonly pid: number
  readonly args: string
}

/**
 * The `tail` processes inside the sandbox that read this run's journal,
 * found through `/proc/<pid>/cmdline` (BusyBox and GNU alike), or `ps` where
 * there is no `/proc`.
 */
export async function journalTails(run: JournalRun): Promise<SandboxProcessInfo[]> {
  const j = shellQuote(run.paths.journal)
  const script = [
    `J=${j}`,
    // Every cmdline is read with tr: BusyBox grep does not match inside /proc's NUL-separated files.
    `if [ -d /proc/self ]; then for f in /proc/[0-9]*/cmdline; do a=$(tr '\\000' ' ' < "$f" 2>/dev/null) || continue; case "$a" in *"$J"*) p=\${f#/proc/}; printf '%s %s\\n' "\${p%/cmdline}" "$a";; esac; done`,
    `else ps -A -o pid= -o args= 2>/dev/null | grep -F -e "$J"; fi`,
    'true',
  ].join('\n')
  const result = await run.handle.process.exec(script)
  expect(result.exitCode, `listing the sandbox's processes: ${result.stderr}`).toBe(0)
  const found: SandboxProcessInfo[] = []
  for (const line of result.stdout.split('\n')) {
    const match = /^\s*(\d+) (.*)$/.exec(line)
    if (!match) continue
    const args = match[2]!.trim()
    const program = args.split(' ')[0]!.split('/').pop()
    if (program === 'tail' && args.includes(run.paths.journal)) found.push({ pid: Number(match[1]), args })
  }
  return found
}

/** Poll `journalTails` until `predicate` holds (bounded), returning the last listing. */
export async function tailsUntil(run: JournalRun, predicate: (tails: SandboxProcessInfo[]) => boolean, timeoutMs = 5_000): Promise<SandboxProcessInfo[]> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const tails = await journalTails(run)
    if (predicate(tails) || Date.now() > until) return tails
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** The handle with its `process.spawn` calls counted (to see a reader follow again). */
export function countingSpawns(handle: SandboxHandle): { handle: SandboxHandle; spawns: () => number } {
  let spawns = 0
  const counted: SandboxHandle = {
    ...handle,
    capabilities: handle.capabilities,
    process: {
      exec: (command, options) => handle.process.exec(command, options),
      spawn: (command, options) => {
        spawns++
        return handle.process.spawn(command, options)
      },
    },
  }
  return { handle: counted, spawns: () => spawns }
}

/** An abort signal that fires `ms` before the case's timeout, so a stuck reader ends with an assertion instead of a vitest timeout. */
export function caseDeadline(context: JournalConformanceContext, spentMs = 5_000): AbortSignal {
  return AbortSignal.timeout(Math.max(1_000, context.timeoutMs - spentMs))
}
