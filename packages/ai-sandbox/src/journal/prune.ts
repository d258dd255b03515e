/**
 * `pruneJournals`: bound the journals nothing else deletes, removing those (and
 * their file baselines) whose runs the store proves terminal, or has no record
 * of past `orphanTtlMs`; everything else is kept. Invariant: total; with valid
 * options it resolves and never rejects. Source: spec 000 "Cleanup".
 * Design notes: docs/design/journal.md
 */
import { isTerminalRunStatus, type RunStore } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import { loggerSchema, parseOptions } from '../contracts/validate.js'
import { DEFAULT_JOURNAL_DIR, journalCleanupCommand, journalDirOf, journalMtimeListCommand, parseJournalMtimeListing, type JournalDirEntry } from './commands.js'
import { baselineCleanupCommand, durableRunFiles } from './run-files.js'

/** A journal whose run has no record is kept until it is this old (by its mtime, on the sandbox clock): 1 hour, in ms. Default of `orphanTtlMs`. */
export const DEFAULT_ORPHAN_TTL_MS = 60 * 60 * 1000

/** Most journals one sweep deletes; the rest wait for the next sweep. Default of `maxDeletes`. */
export const DEFAULT_MAX_DELETES = 100

/**
 * Why a journal was kept.
 *
 * - `undecodable`: its file name is not one `encodeRunId` writes, so no run id can be trusted from it.
 * - `too-young`: the run store has no record of its run and it was modified less than `orphanTtlMs` ago (it may not be an orphan yet).
 * - `non-terminal`: its run is `running` or `interrupted`.
 * - `store-failed`: the run store could not be read for it.
 * - `max-deletes`: it could be deleted, but this sweep reached `maxDeletes`.
 */
export type KeptJournalReason = 'undecodable' | 'too-young' | 'non-terminal' | 'store-failed' | 'max-deletes'

/** A journal the sweep kept. */
export interface KeptJournal {
  /** Absolute path of the `.ndjson` file inside the sandbox. */
  readonly path: string
  /** The run id its name decodes to (absent for `undecodable`). */
  readonly runId?: string
  readonly reason: KeptJournalReason
}

/** Something the sweep could not do: list the folder, or delete one journal. */
export interface PruneJournalsFailure {
  readonly stage: 'list' | 'delete'
  /** The journal, for `delete`. */
  readonly path?: string
  readonly runId?: string
  readonly error: unknown
}

/** What one prune did. */
export interface PruneJournalsResult {
  /** The run ids whose journal (and `.err` sidecar) was deleted: terminal runs and orphans. */
  readonly deleted: readonly string[]
  /** Those of `deleted` that were orphans: no record, older than `orphanTtlMs`. */
  readonly orphans: readonly string[]
  readonly kept: readonly KeptJournal[]
  readonly failures: readonly PruneJournalsFailure[]
}

/** Options of {@link pruneJournals}. */
export interface PruneJournalsOptions {
  /** A sandbox whose journal folder to sweep (capability `exec`). On a provider whose sandboxes share the host's `/tmp` (local-process) any one of them sees every journal. */
  handle: SandboxHandle
  /** The SAME `RunStore` the chat routes use: the only authority on whether a run is over. */
  runs: RunStore
  /** Absolute journal folder, as given to `withSandbox`'s `durability.journalDir`. Default: the handle's own `journalDir` (a provider's choice), else `DEFAULT_JOURNAL_DIR` (`/tmp/tanstack-runs`); see `journalDirOf`. */
  journalDir?: string
  /** Keep a journal whose run has no record until it is this many ms old (since its last write); then it is an orphan and deleted. Default {@link DEFAULT_ORPHAN_TTL_MS}. */
  orphanTtlMs?: number
  /** Most deletions per sweep. Default {@link DEFAULT_MAX_DELETES}. */
  maxDeletes?: number
  /** Receives every failure on `errors` (`pruneJournals: ` lines). */
  logger?: InternalLogger
}

const optionsSchema = z
  .object({
    handle: z.custom<SandboxHandle>((v) => typeof v === 'object' && v !== null && typeof (v as { process?: { exec?: unknown } }).process?.exec === 'function', { message: 'expected a SandboxHandle (an object with process.exec) whose journal folder to sweep' }),
    runs: z.custom<RunStore>((v) => typeof v === 'object' && v !== null && typeof (v as RunStore).get === 'function', { message: 'expected the RunStore the chat routes use (an object with get)' }),
    journalDir: z.string('expected an absolute folder inside the sandbox').startsWith('/', `expected an absolute folder inside the sandbox, e.g. ${DEFAULT_JOURNAL_DIR}`).optional(),
    orphanTtlMs: z.number('expected the orphan TTL in ms').int('expected whole ms').min(0, 'expected 0 ms or more').optional(),
    maxDeletes: z.number('expected a number of journals').int('expected a whole number').min(1, 'expected at least 1').optional(),
    logger: loggerSchema,
  })
  .strict()

/**
 * Delete the journals of terminal runs from a sandbox's journal folder. Per journal:
 *
 * | the journal                                        | kept as / result |
 * | -------------------------------------------------- | ---------------- |
 * | name not written by `encodeRunId`                  | `undecodable`    |
 * | `runs.get` throws                                  | `store-failed`   |
 * | record `running` / `interrupted`                   | `non-terminal`   |
 * | record `completed` / `failed` / `aborted`, whatever its age | deleted (journal + `.err` + file baseline) |
 * | no record, modified less than `orphanTtlMs` ago (sandbox clock) | `too-young` |
 * | no record, older: an orphan                        | deleted, and listed in `orphans` |
 * | to delete, once `maxDeletes` were deleted          | `max-deletes`    |
 *
 * Runs from a cron the application schedules, not from a run.
 *
 * @param options - {@link PruneJournalsOptions}.
 * @returns A {@link PruneJournalsResult}; a listing or deletion failure is a `failures` entry. Never rejects.
 * @throws SandboxConfigError `pruneJournals.<field>` (synchronously) for a missing or mistyped option.
 * @example
 * ```ts
 * const { deleted, kept } = await pruneJournals({ handle, runs })
 * console.log(`deleted ${deleted.length}, kept ${kept.length}`)
 * ```
 */
export function pruneJournals(options: PruneJournalsOptions): Promise<PruneJournalsResult> {
  const parsed = parseOptions(optionsSchema, options, 'pruneJournals')
  return prune({ ...options, ...parsed })
}

async function prune(options: PruneJournalsOptions): Promise<PruneJournalsResult> {
  const { handle, runs, journalDir: givenDir, orphanTtlMs = DEFAULT_ORPHAN_TTL_MS, maxDeletes = DEFAULT_MAX_DELETES, logger } = options
  const journalDir = journalDirOf(handle, givenDir)
  const report = (message: string, error: unknown): void => {
    try {
      logger?.errors(`pruneJournals: ${message}`, { error })
    } catch {
      // a throwing logger changes nothing
    }
  }
  const deleted: string[] = []
  const kept: KeptJournal[] = []
  const failures: PruneJournalsFailure[] = []
  let entries: readonly JournalDirEntry[]
  let nowMs: number
  try {
    const result = await handle.process.exec(journalMtimeListCommand(journalDir))
    if (result.exitCode !== 0) throw new Error(`the listing exited ${result.exitCode}: ${result.stderr.trim().slice(0, 200)}`)
    ;({ entries, nowMs } = parseJournalMtimeListing(result.stdout, journalDir))
  } catch (error) {
    report(`listing ${journalDir} failed; nothing was deleted`, error)
    return { deleted, orphans: [], kept, failures: [{ stage: 'list', error }] }
  }
  const orphans: string[] = []
  for (const entry of entries) {
    const { path, runId } = entry
    if (runId === undefined) {
      kept.push({ path, reason: 'undecodable' })
      continue
    }
    let status
    try {
      status = (await runs.get(runId))?.status
    } catch (error) {
      report(`reading the record of run ${runId} failed; its journal is kept`, error)
      kept.push({ path, runId, reason: 'store-failed' })
      continue
    }
    if (status !== undefined && !isTerminalRunStatus(status)) {
      kept.push({ path, runId, reason: 'non-terminal' })
      continue
    }
    const orphan = status === undefined
    if (orphan && (entry.mtimeMs === undefined || nowMs - entry.mtimeMs < orphanTtlMs)) {
      kept.push({ path, runId, reason: 'too-young' })
      continue
    }
    if (deleted.length >= maxDeletes) {
      kept.push({ path, runId, reason: 'max-deletes' })
      continue
    }
    try {
      // The run's file baseline goes with its journal (a host that died before the run's end left it).
      const files = durableRunFiles(runId, journalDir)
      const result = await handle.process.exec(`${journalCleanupCommand(files)}; ${baselineCleanupCommand(files)}`)
      if (result.exitCode !== 0) throw new Error(`the deletion exited ${result.exitCode}: ${result.stderr.trim().slice(0, 200)}`)
      deleted.push(runId)
      if (orphan) orphans.push(runId)
    } catch (error) {
      report(`deleting the journal of run ${runId} failed`, error)
      failures.push({ stage: 'delete', path, runId, error })
    }
  }
  return { deleted, orphans, kept, failures }
}
