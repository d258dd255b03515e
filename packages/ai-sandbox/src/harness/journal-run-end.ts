/**
 * The end of a journaled run that its reader did not see to the sentinel: the
 * run's process tag (derived from its id, so any host can recompute it), and
 * `endJournaledRun`, which stops the run's processes and deletes its journal.
 * Used by the harness when a run ends on this host without a detach (a
 * timeout, a grace stop, a consumer that left) and by `withSandbox` before it
 * destroys the sandbox of a cancelled durable run: a provider whose sandboxes
 * share the host (local-process) cannot stop what another host started, and
 * keeps the journal outside the sandbox folder. Internal.
 * Source: spec 000 "Durable runs (the run journal)", "Cleanup".
 */
import type { SandboxHandle } from '../contracts/handle.js'
import { journalCleanupCommand, journalDirOf, journalExitProbeCommand, journalPaths, parseJournalExit } from '../journal/commands.js'
import { journalTrustOf } from '../journal/sentinel.js'
import { baselineCleanupCommand, durableRunFiles } from '../journal/run-files.js'
import { stopTaggedProcesses } from './stop-run-processes.js'

/** How long the end of a journaled run waits for the agent's shell to write its sentinel before the journal is deleted anyway, in ms. */
const JOURNAL_FINISH_WAIT_MS = 3000


/**
 * Delete the journal of a run that ended without its reader seeing the
 * sentinel: wait for the sentinel first (the agent was just stopped; a late
 * sentinel would otherwise recreate the file), up to 3 s, then delete. Never
 * rejects; a failure goes to `log`.
 *
 * @param journal - The run's id and journal folder (default `DEFAULT_JOURNAL_DIR`).
 */
export async function finishJournal(handle: SandboxHandle, journal: { runId: string; dir?: string | undefined }, log: (message: string) => void): Promise<void> {
  const deadline = Date.now() + JOURNAL_FINISH_WAIT_MS
  try {
    // Inside the try: an id the journal refuses must reach `log`, not reject a promise nobody awaits.
    const paths = journalPaths(journal.runId, journalDirOf(handle, journal.dir))
    for (;;) {
      const probe = await handle.process.exec(journalExitProbeCommand(paths, 4096))
      const state = parseJournalExit(probe.stdout, journalTrustOf(handle, journal.runId)).state
      if (state !== 'running' || Date.now() > deadline) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await handle.process.exec(journalCleanupCommand(paths))
  } catch (error) {
    log(`could not delete the journal of run ${journal.runId}: ${String(error)}`)
  }
}

/**
 * Stop every process of a journaled run (its tag), then delete its journal
 * ({@link finishJournal}) and the run's file baseline (`durableRunFiles(...).baseline`).
 * A run with no journal costs three commands that find nothing. Never
 * rejects; a failure goes to `log`. A sandbox without `exec` has nothing
 * this can do.
 */
export async function endJournaledRun(handle: SandboxHandle, journal: { runId: string; dir?: string | undefined }, log: (message: string) => void): Promise<void> {
  if (!handle.capabilities.exec) return
  try {
    const stopped = await stopTaggedProcesses(handle, durableRunFiles(journal.runId).tag)
    if (stopped) log(`stopped the processes of run ${journal.runId} (${stopped})`)
  } catch (error) {
    log(`could not stop the processes of run ${journal.runId}: ${String(error)}`)
  }
  await finishJournal(handle, journal, log)
  try {
    await handle.process.exec(baselineCleanupCommand(durableRunFiles(journal.runId, journalDirOf(handle, journal.dir))))
  } catch (error) {
    log(`could not delete the file baseline of run ${journal.runId}: ${String(error)}`)
  }
}
