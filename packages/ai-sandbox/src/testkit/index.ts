/**
 * `@tanstack/ai-sandbox/testkit`: the conformance kits providers and stores
 * run in their own vitest suites. Loads `vitest` (an optional peer
 * dependency), so nothing in the runtime entry may import from here. The
 * individual checks are exported too, for authors who want to run one rule
 * directly (or prove a deliberately broken fake fails it).
 */

// Instance store kit
export { runSandboxInstanceStoreConformance, INSTANCE_STORE_CHECKS } from './instance-store-conformance.js'
export {
  checkStoreGetMissing,
  checkStoreRoundTrip,
  checkStoreUpsertReplaces,
  checkStoreDelete,
  checkStoreKeysIndependent,
  checkStoreOddKeys,
  checkStoreConcurrentUpserts,
} from './instance-store-conformance.js'

// Provider kit: the runner and its context
export { runSandboxProviderConformance } from './provider-conformance.js'
export type { SandboxProviderConformanceOptions } from './provider-conformance.js'
export { createProviderConformanceContext } from './provider/context.js'
export { SANDBOX_ERROR_RULE, reportForeignErrors } from './provider/assert.js'
export type {
  ProviderConformanceContext,
  ProviderConformanceContextOptions,
  ProviderConformanceGroup,
  ProviderConformanceSkip,
  SandboxTools,
} from './provider/context.js'

// Provider kit: individual checks, one concern per line
export { checkCapabilityFlags, checkUnsupportedCapability, checkStdinUnsupported, checkKillUnsupported } from './provider/capabilities.js'
export {
  checkCreateIdentity,
  checkWorkspaceStartsEmpty,
  checkSandboxesAreIsolated,
  checkResumeLiveSandbox,
  checkDestroyIsIdempotent,
  checkProviderDestroy,
  checkResumeUnknownId,
  checkDestroyStopsProcesses,
  checkDestroyLeavesNoResources,
  SPAWN_RUNNING_RULE,
} from './provider/lifecycle.js'
export {
  checkFsTextRoundTrip,
  checkFsBytesRoundTrip,
  checkFsWriteCreatesParents,
  checkFsList,
  checkFsMkdir,
  checkFsRemove,
  checkFsRename,
  checkFsExists,
  checkFsLstat,
  checkFsSymlinkMetadata,
  checkFsWatch,
} from './provider/fs.js'
export { checkFsVirtualRoot, checkFsPathConfinement, checkFsReadMissing, checkFsSymlinkEscape, checkFsSymlinkInside } from './provider/fs-paths.js'
export { FS_RACE_OPERATIONS, raceFsOperation, checkFsRace, checkFsFifoRefused, checkFsDeviceRefused, checkFsHardLink, checkFsReadLimit } from './provider/fs-races.js'
export type { FsRaceOperation, FsRaceOptions, FsRaceOutcome } from './provider/fs-races.js'
export { checkExecOutput, checkExecExitCodes, checkExecCwd, checkExecEnv, checkExecStdin, checkExecLargeOutput, checkExecTimeout, checkExecEndsWhenShellExits, checkCreateEnv } from './provider/exec.js'
export { checkEnvSetMerges, checkEnvReachesSpawn } from './provider/env.js'
export {
  checkExecAbortStopsEscapedChild,
  checkExecTimeoutStopsEscapedChild,
  checkSpawnKillStopsEscapedChild,
  checkDestroyStopsEscapedChildren,
  escapingCommand,
  processesWithArgsScript,
  ESCAPE_SHAPES,
} from './provider/cancel.js'
export type { EscapeShape, EscapingCommand } from './provider/cancel.js'
export {
  checkSpawnStreams,
  checkSpawnLargeOutput,
  checkSpawnReturnsBeforeExit,
  checkSpawnStdin,
  checkSpawnKillJob,
  checkSpawnKillSetsidChild,
  checkSpawnKillAfterExit,
  checkSpawnEndsWhenShellExits,
} from './provider/spawn.js'
export { checkPortsConnect, checkPortsRejectInvalid, checkPortsReachServer } from './provider/ports.js'
export { checkGitLocalRepo, checkGitCloneRemote } from './provider/git.js'
export { checkSnapshotRestore, checkForkIsIndependent } from './provider/snapshots.js'

// Journal kit: the run journal's contract over a real provider
export { runJournalConformance } from './journal-conformance.js'
export type { JournalConformanceOptions } from './journal-conformance.js'
export { createJournalConformanceContext } from './journal/context.js'
export type { JournalConformanceContext, JournalRun } from './journal/context.js'
export {
  checkJournalStdoutWithSentinel,
  checkJournalNonZeroExit,
  checkJournalStderrSeparate,
  checkJournalStdinFile,
  checkJournalOffsets,
  checkJournalLiveDelivery,
  checkJournalLongReadNotStalled,
  checkJournalFollowAbortLeavesNoTail,
  checkJournalPollAbort,
  checkJournalForgedSentinel,
  checkJournalRewritten,
  checkJournalHostileRunId,
  hostileRunId,
  checkJournalDetachedRead,
  checkJournalDeletedAfterSentinel,
  checkJournalRefollow,
  checkJournalPollMatchesFollow,
} from './journal/cases.js'

// Durable run fields kit: core's RunStore contract with the eight fields durable runs depend on
export { runDurableRunFieldsConformance, DURABLE_RUN_FIELDS_CHECKS } from './durable-run-fields-conformance.js'
export type { DurableRunFieldsCheck } from './durable-run-fields-conformance.js'
export {
  checkRunCreate,
  checkRunResume,
  checkRunGetUnknown,
  checkRunUpdateUnknown,
  checkRunFieldsRoundTrip,
  checkRunPatchOmittedKeyKeeps,
  checkRunPatchUndefinedClears,
  checkRunFindActiveRun,
  checkRunListByThread,
  checkRunListReclaimable,
  checkRunListUndetachedRuns,
  checkRunListEndedRuns,
} from './durable-run-fields-conformance.js'

// Epoch-fence kit: a store's engine refuses a superseded writer's append and terminal update
export { runEpochFenceConformance, EPOCH_FENCE_CHECKS, checkUpdateAtEpoch, checkStaleAppendRefused, checkFirstHostFenced, checkClaimRace, checkStaleCloseIgnored } from './epoch-fence-conformance.js'
export type { EpochFenceConformanceOptions, EpochFenceStores, EpochFenceCheck } from './epoch-fence-conformance.js'

// Takeover kit: two sandboxRunDrivers, one run, over a store author's RunStore, LockStore and log
export { runTakeoverConformance, TAKEOVER_CHECKS, DEFAULT_KIT_FENCE_QUIET_MS } from './takeover-conformance.js'
export type { TakeoverConformanceOptions, TakeoverCheck, TakeoverCheckSettings, TakeoverStores } from './takeover-conformance.js'
export {
  checkTakeoverSingleWriter,
  checkTakeoverSupersededAppendRefused,
  checkTakeoverRefusalLatches,
  checkTakeoverLostTerminalSuppressed,
  checkTakeoverRefusesTerminalAndUnknown,
} from './takeover-conformance.js'

// Reaper kit: probeRunExit, reapDetachedRuns, reclaimSandbox and pruneJournals over a real provider, with real detached withSandbox runs
export { runReaperConformance, REAPER_CHECKS } from './reaper-conformance.js'
export type { ReaperConformanceOptions, ReaperCheck } from './reaper-conformance.js'
export { checkProbeRunExit, checkReapSweep, checkReclaimSandbox, checkPruneJournals } from './reaper-conformance.js'
export { createReaperConformanceContext, inMemoryReaperStores, reaperAgentAdapter, reaperAgentText, reaperMarker } from './reaper-conformance.js'
export type { ReaperConformanceContext, ReaperStores, DetachedRun, ReaperAgentScript } from './reaper-conformance.js'

// Stream durability kit: the run event log (StreamDurability) a store author writes, proven as core's memoryStream is
export { runStreamDurabilityConformance, STREAM_DURABILITY_CHECKS } from './stream-durability-conformance.js'
export type { StreamDurabilityConformanceOptions, StreamDurabilityStores, StreamDurabilityCheck, StreamDurabilityCheckEntry, StreamDurabilityCheckSettings } from './stream-durability-conformance.js'
export {
  checkStreamAppendRead,
  checkStreamResumeFrom,
  checkStreamSseResume,
  checkStreamLiveTail,
  checkStreamCloseEndsReaders,
  checkStreamClosedLogEnds,
  checkStreamClosedLogRefusesWrites,
  checkStreamRunsIsolated,
  checkStreamMalformedOffset,
  checkStreamConcurrentAppends,
  checkStreamSnapshot,
  checkStreamEmptyJoinFails,
  checkStreamUpsert,
} from './stream-durability-conformance.js'

// Lock store kit: the LockStore contract of @tanstack/ai/locks (exclusion, hand-over, keys, leases) and isHeld where present
export { runLockStoreConformance, LOCK_STORE_CHECKS } from './lock-store-conformance.js'
export type { LockStoreConformanceOptions, LockStores, LockStoreCheck, LockStoreCheckEntry, LockStoreCheckSettings } from './lock-store-conformance.js'
export {
  checkLockExclusive,
  checkLockHandsOver,
  checkLockKeysIndependent,
  checkLockIsHeld,
  checkLockLeaseRenewed,
  checkLockLeaseExpires,
  checkLockLostHolderCannotRelease,
} from './lock-store-conformance.js'

// Portable snapshot kit: capture and restore over a real provider, and across two
export { runSandboxSnapshotConformance } from './snapshot-conformance.js'
export type { SandboxSnapshotConformanceOptions } from './snapshot-conformance.js'
export {
  checkDefaultPolicyPaths,
  checkRestoreByteIdentical,
  checkSecretsZeroed,
  checkPolicyOptions,
  checkRefusedEntries,
  checkTamperedRestore,
  checkRestoreOverExisting,
  checkLargeTree,
  checkCrossProvider,
  kitBlobStore,
} from './snapshots/cases.js'
export type { SnapshotKitContext, SnapshotKitRole, KitBlobStore } from './snapshots/cases.js'
export { writeSnapshotFixture, readSandboxTree, expectedFixtureTree, maskSecretFile, SNAPSHOT_FIXTURE_SECRET } from './snapshots/fixture.js'
export type { FixtureEntry, TreeLine } from './snapshots/fixture.js'

// Checkpoint store kit (portable snapshots): messages, artifacts, blobs, the checkpoint chain, its lease and fork
export { runSandboxCheckpointStoreConformance, CHECKPOINT_STORE_CHECKS, checkEmptyThread, checkAppendChain, checkAppendMissingBlob, checkLeaseFencing, checkLeaseExpiry, checkRaces, checkBlobReferences, checkBlobGrace, checkArtifacts, checkMessages, checkFork } from './checkpoint-store-conformance.js'
export type { SandboxCheckpointStoreConformanceOptions } from './checkpoint-store-conformance.js'
