/**
 * The end of a journaled run whose reader did not see the sentinel:
 * `finishJournal` deletes the journal once the sentinel is there (or after
 * 3 s), `endJournaledRun` first stops the run's tagged processes and then also
 * deletes its file baseline. Used by the harness, withSandbox's destroy, the
 * reaper's reclaim and the journal cleanup; never rejects.
 * Source: spec 000 "Durable runs (the run journal)", "Cleanup".
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { pause } from '../contracts/pause.js'
import { journalCleanupCommand, journalExitProbeCommand, parseJournalExit } from './commands.js'
import { journalTrustOf } from './sentinel.js'
import { baselineCleanupCommand, runFilesOf, type DurableRunFiles } from './run-files.js'
import { stopTaggedProcesses } from '../shell/process-tags.js'

/** How long the end of a journaled run waits for the agent's shell to write its sentinel before the journal is deleted anyway, in ms. */
const JOURNAL_FINISH_WAIT_MS = 3000


/** A run's journal as the end functions take it: its names, or its id and folder (the names are derived inside, so a refused id reaches `log`). */
export type JournalOfRun = DurableRunFiles | { readonly runId: string; readonly dir?: string | undefined }

/**
 * Delete the journal of a run that ended without its reader seeing the
 * sentinel: wait for the sentinel first (the agent was just stopped; a late
 * sentinel would otherwise recreate the file), up to 3 s, then delete. Never
 * rejects; a failure goes to `log`.
 *
 * @param journal - The run's files (`runFilesOf`), or its id and journal folder (default `DEFAULT_JOURNAL_DIR`).
 */
export async function finishJournal(handle: SandboxHandle, journal: JournalOfRun, log: (message: string) => void): Promise<void> {
  const deadline = Date.now() + JOURNAL_FINISH_WAIT_MS
  try {
    // Inside the try: an id the journal refuses must reach `log`, not reject a promise nobody awaits.
    const files = filesOf(handle, journal)
    for (;;) {
      const probe = await handle.process.exec(journalExitProbeCommand(files, 4096))
      const state = parseJournalExit(probe.stdout, journalTrustOf(handle, files.runId)).state
      if (state !== 'running' || Date.now() > deadline) break
      await pause(100)
    }
    await handle.process.exec(journalCleanupCommand(files))
  } catch (error) {
    log(`could not delete the journal of run ${journal.runId}: ${String(error)}`)
  }
}

/**
 * Stop every process of a journaled run (its tag), then delete its journal
 * ({@link finishJournal}) and the run's file baseline. A run with no journal
 * costs three commands that find nothing. Never rejects; a failure goes to
 * `log`. A sandbox without `exec` has nothing this can do.
 */
export async function endJournaledRun(handle: SandboxHandle, journal: JournalOfRun, log: (message: string) => void): Promise<void> {
  if (!handle.capabilities.exec) return
  let files: DurableRunFiles
  try {
    files = filesOf(handle, journal)
  } catch (error) {
    return log(`could not delete the journal of run ${journal.runId}, stop its processes or delete its baseline: ${String(error)}`)
  }
  try {
    const stopped = await stopTaggedProcesses(handle, files.tag)
    if (stopped) log(`stopped the processes of run ${files.runId} (${stopped})`)
  } catch (error) {
    log(`could not stop the processes of run ${files.runId}: ${String(error)}`)
  }
  await finishJournal(handle, files, log)
  try {
    await handle.process.exec(baselineCleanupCommand(files))
  } catch (error) {
    log(`could not delete the file baseline of run ${files.runId}: ${String(error)}`)
  }
}

function filesOf(handle: SandboxHandle, journal: JournalOfRun): DurableRunFiles {
  return 'tag' in journal ? journal : runFilesOf(handle, journal)
}
