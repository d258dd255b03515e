// The reaper (spec 000 "The reaper ships as a function, not a scheduler", "Cleanup"): the out-of-band exit probe, the detached-run sweep, sandbox reclaim and the journal prune.
export { probeRunExit } from './probe.js'
export type { RunExitProbe, ProbeRunExitOptions } from './probe.js'
export { reapDetachedRuns, DEFAULT_RUN_BUDGET_MS, DEFAULT_MAX_RUNS } from './reap.js'
export type { ReapRunOutcome, ReapRunEntry, ReapResult, ReapOptions } from './reap.js'
export { DEFAULT_RECLAIM_DESTROY_ATTEMPTS, DEFAULT_RECLAIM_RETRY_DELAY_MS, reclaimSandbox, sandboxReclaimer, SandboxReclaimFailedError } from './reclaim.js'
export type { ReclaimOutcome, ReclaimSandboxOptions, SandboxReclaimFailedReason } from './reclaim.js'
export { pruneJournals, DEFAULT_ORPHAN_TTL_MS, DEFAULT_MAX_DELETES } from './prune.js'
export type { PruneJournalsOptions, PruneJournalsResult, KeptJournal, KeptJournalReason, PruneJournalsFailure } from './prune.js'
