// The reaper (spec 000 "The reaper ships as a function, not a scheduler",
// "Cleanup"): the out-of-band exit probe, the detached-run sweep, sandbox
// reclaim, and the optional store methods it uses to find ended and orphaned
// runs. The journal prune (pruneJournals) is part of cleanup but lives in and
// is exported from ../journal. Not exported: the sweep's time bounds
// (reap-budget), internal to reapDetachedRuns.
export { probeRunExit } from './probe.js'
export type { RunExitProbe, ProbeRunExitOptions } from './probe.js'
export { reapDetachedRuns, DEFAULT_RUN_BUDGET_MS, DEFAULT_MAX_RUNS } from './reap.js'
export type { ReapRunOutcome, ReapRunEntry, ReapResult, ReapOptions } from './reap.js'
export { DEFAULT_RECLAIM_DESTROY_ATTEMPTS, DEFAULT_RECLAIM_RETRY_DELAY_MS, reclaimSandbox, sandboxReclaimer, SandboxReclaimFailedError } from './reclaim.js'
export type { ReclaimOutcome, ReclaimSandboxOptions, SandboxReclaimFailedReason } from './reclaim.js'
export { DEFAULT_ENDED_RUN_LOOKBACK_MS, isEndedRunLister } from './ended-runs.js'
export type { EndedRunEntry, EndedRunLister } from './ended-runs.js'
export { DEFAULT_ORPHAN_GRACE_MS, isLockProbe, isUndetachedRunLister } from './orphans.js'
export type { LockProbe, UndetachedRunLister } from './orphans.js'
