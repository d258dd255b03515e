// The run journal: where an agent's output lives inside the sandbox so it
// outlives the host: the shell commands over it, the exit sentinel, byte
// framing, the readers, the attach preflight, the journaled start and the
// prune. Not exported: the per-run file names (run-files), the end of a run
// (run-end) and the NDJSON line parser, which other core folders (harness,
// middleware, durability, reaper) import directly.
export { DEFAULT_JOURNAL_DIR, DEFAULT_EXIT_PROBE_BYTES, journalPaths, journaledCommand, journalFollowCommand, journalExistsCommand, journalListCommand, parseJournalList, journalMtimeListCommand, parseJournalMtimeListing, journalExitProbeCommand, parseJournalExit, journalLaunchStdin } from './commands.js'
export type { JournalPaths, JournalDirEntry, JournalMtimeListing, JournalExitState, JournaledCommandOptions } from './commands.js'
export { journalReadCommand, parseJournalRead } from './bounded-read.js'
export type { JournalRead } from './bounded-read.js'
export { encodeRunId, decodeJournalRunId } from './run-id.js'
export type { DecodedJournalRunId } from './run-id.js'
export { EXIT_SENTINEL_KEY, EXIT_SENTINEL_NONCE_KEY, exitSentinelLine, parseExitSentinel, journalHeaderLine, journalNonce, journalTrustOf, expectedJournalHeader, JOURNAL_SALT_KEY, MIN_JOURNAL_SECRET_LENGTH } from './sentinel.js'
export type { JournalHeader, JournalTrust } from './sentinel.js'
export { decodeBase64Stream, encodeUtf8Stream, toJournalLines } from './bytes.js'
export type { JournalLine, ToJournalLinesOptions } from './bytes.js'
export { readJournal, journalReadStrategy, DEFAULT_JOURNAL_POLL_MS, DEFAULT_JOURNAL_STALL_MS } from './reader.js'
export type { ReadJournalOptions, JournalReadStrategy } from './reader.js'
export { awaitAttachableJournal, JournalAttachUnavailableError, DEFAULT_ATTACH_JOURNAL_WAIT_MS, DEFAULT_ATTACH_PROBE_INTERVAL_MS } from './attach-preflight.js'
export type { AttachUnavailableReason, AwaitAttachableJournalOptions } from './attach-preflight.js'
export { JournalError, MAX_JOURNAL_RUN_ID_LENGTH } from './errors.js'
export type { JournalErrorReason } from './errors.js'
export { startJournaledAgent, readJournalNdjson } from './journaled-spawn.js'
export type { StartJournaledAgentOptions, ReadJournalNdjsonOptions } from './journaled-spawn.js'
export { pruneJournals, DEFAULT_ORPHAN_TTL_MS, DEFAULT_MAX_DELETES } from './prune.js'
export type { PruneJournalsOptions, PruneJournalsResult, KeptJournal, KeptJournalReason, PruneJournalsFailure } from './prune.js'
