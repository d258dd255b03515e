/**
 * Deletes the journal of a durable run that ended on this host, only once the
 * run's end is recorded. Runs in the background, never rejects, and gives up
 * after {@link JOURNAL_CLEANUP_WAIT_MS}, leaving it to `pruneJournals`.
 * Source: issue 28 "the end of a run", spec 000 "Durable runs (the run journal)".
 * Design notes: docs/design/durability.md
 */
import { isTerminalRunStatus, type RunStore } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import type { SandboxHandle } from '../contracts/handle.js'
import type { SandboxDurabilityLog } from './capability.js'
import { storedRunEnd } from './run-outcome.js'
import { finishJournal } from '../journal/run-end.js'
import type { DurableRunFiles } from '../journal/run-files.js'

/** How long, in ms, the cleanup waits for the run's end to be recorded before it leaves the journal to `pruneJournals`. */
const JOURNAL_CLEANUP_WAIT_MS = 30_000

/** Pause between two looks at the record and the log, in ms. */
const POLL_MS = 200

/** What {@link cleanUpJournalOnceRecorded} needs. */
export interface JournalCleanupInput {
  handle: SandboxHandle
  /** The run's journal files (`runFilesOf`). */
  files: DurableRunFiles
  runs: RunStore
  log: SandboxDurabilityLog
  logger?: InternalLogger
}

/** Start the cleanup in the background (see the module header). */
export function cleanUpJournalOnceRecorded(input: JournalCleanupInput): void {
  void cleanUp(input).catch((error: unknown) => input.logger?.errors(`withSandbox: deleting the journal of run ${input.files.runId} failed`, { error }))
}

async function cleanUp(input: JournalCleanupInput): Promise<void> {
  const { handle, files, logger } = input
  const { runId } = files
  const deadline = Date.now() + JOURNAL_CLEANUP_WAIT_MS
  while (!(await endRecorded(input))) {
    if (Date.now() > deadline) return void logger?.sandbox(`withSandbox: the end of run ${runId} was not recorded within ${JOURNAL_CLEANUP_WAIT_MS} ms; its journal is left for pruneJournals`)
    await new Promise((resolve) => setTimeout(resolve, POLL_MS).unref())
  }
  await finishJournal(handle, files, (message) => logger?.sandbox(`withSandbox: ${message}`))
}

/** Whether the run's end is recorded: a terminal record, or a terminal chunk in the log; or no record at all. A failed read answers no. */
async function endRecorded(input: JournalCleanupInput): Promise<boolean> {
  try {
    const record = await input.runs.get(input.files.runId)
    // No record: no host can claim the run, so no successor will ever need its journal.
    if (!record || isTerminalRunStatus(record.status)) return true
    return storedRunEnd((await input.log.snapshot()).map((entry) => entry.chunk)) !== undefined
  } catch {
    return false
  }
}
