/**
 * The `journal` option of `spawnNdjson` (and of the journaled start and
 * read): which run's journal, in which folder, and how to read it. Here, in
 * the journal's home, so everything that hands it on (the durability
 * capability, the harness) takes it from one place.
 */
import type { ReadJournalOptions } from './reader.js'

/** `spawnNdjson`'s `journal` option: route the run through its journal. */
export interface JournalOptions extends Pick<ReadJournalOptions, 'strategy' | 'pollMs' | 'emptyWaitMs' | 'stallMs'> {
  /** The run's id; MUST be unique per run (a reused id appends to the earlier run's journal). */
  runId: string
  /** Absolute journal folder inside the sandbox. Default `DEFAULT_JOURNAL_DIR` (`/tmp/tanstack-runs`). */
  dir?: string
  /** Keep the journal after its sentinel was read: the caller deletes it once the run's end is recorded (`journalCleanupCommand`). Default `false`. */
  keep?: boolean
}

