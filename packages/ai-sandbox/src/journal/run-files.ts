/**
 * Every name a durable run goes by inside its sandbox, derived in one place
 * from its run id and journal folder: the journal and stderr files, the file
 * baseline folder and the process tag. Each host of the run computes the same
 * names, which is what lets a successor find, stop and remove what the first
 * host started. Pure.
 */
import { createHash } from 'node:crypto'
import { posix } from 'node:path'
import { shellQuote } from '../shell/quote.js'
import { DEFAULT_JOURNAL_DIR, journalDirOf, journalPaths, type JournalPaths } from './commands.js'

/** A durable run's names: its {@link JournalPaths} plus the baseline folder and the process tag. */
export interface DurableRunFiles extends JournalPaths {
  /** The run id the names were derived from. */
  readonly runId: string
  /** The run's file baseline (the workspace as the run started): `<dir>/baseline-<32 hex of sha256(runId)>`. */
  readonly baseline: string
  /** The tag every process of the run's agent carries, for a sweep on any host: `journal-<32 hex of sha256(runId)>`. */
  readonly tag: string
}

/**
 * The names of run `runId`'s files in journal folder `dir`.
 * @param runId - The run's id (see `encodeRunId` for what is accepted).
 * @param dir - Absolute journal folder. Default `DEFAULT_JOURNAL_DIR` (`/tmp/tanstack-runs`).
 * @throws JournalError `invalid-run-id` for an unusable id; SandboxConfigError `journal.dir` for a relative `dir`.
 * @example
 * ```ts
 * durableRunFiles('run-7').baseline // '/tmp/tanstack-runs/baseline-<32 hex>'
 * ```
 */
export function durableRunFiles(runId: string, dir: string = DEFAULT_JOURNAL_DIR): DurableRunFiles {
  const paths = journalPaths(runId, dir)
  const digest = createHash('sha256').update(runId).digest('hex').slice(0, 32)
  return { ...paths, runId, baseline: posix.join(paths.dir, `baseline-${digest}`), tag: `journal-${digest}` }
}

/**
 * The names of a run's files in the journal folder `handle` uses: `dir` when
 * given, else the handle's `journalDir`, else `DEFAULT_JOURNAL_DIR` (the rule
 * of `journalDirOf`). The one way core derives them from a handle; compute it
 * once per run and hand the result on.
 * @throws As {@link durableRunFiles}.
 */
export function runFilesOf(handle: { readonly journalDir?: string | undefined }, journal: { readonly runId: string; readonly dir?: string | undefined }): DurableRunFiles {
  return durableRunFiles(journal.runId, journalDirOf(handle, journal.dir))
}

/** The shell command that removes a run's file baseline; exits 0 whatever happens. */
export function baselineCleanupCommand(files: Pick<DurableRunFiles, 'baseline'>): string {
  return `rm -rf -- ${shellQuote(files.baseline)}; true`
}
