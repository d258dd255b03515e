// Durability: what keeps a run's stream alive past the host that started it:
// replay alignment against the run's stored event log, the chunk identity it
// compares by, the run driver (pipeToRunLog, RunController, sandboxRunDriver),
// engine-enforced fencing and the helpers store authors need. Not exported: the
// log writer, the outcome and report helpers, the detach notice, the journal
// cleanup and the claim primitives, all internal to the driver and withSandbox.
export { chunkFingerprint, chunkFingerprintIgnoringThreadId, chunkThreadId } from './chunk-identity.js'
export { alignToStoredLog, JournalReplayDivergedError, JournalReplayThreadIdMismatchError, DEFAULT_MAX_OUT_OF_BAND_SKIP } from './align.js'
export type { AlignToStoredLogOptions, JournalReplayDivergedReason } from './align.js'
export { journalOptionsFor, alignedIfAttaching } from './capability.js'
export type { SandboxDurabilityOptions, SandboxDurabilityLog, SandboxRunDurability } from './capability.js'
export { pipeToRunLog } from './run-log.js'
export type { PipeToRunLogOptions } from './run-log.js'
export { RunController } from './run-controller.js'
export type { RunDeps, RunControllerStartInput, RunHandle } from './run-controller.js'
// Takeover (spec 003): the driver and its errors. The claim primitives (withRunClaim, fenceDurability, awaitLogQuiescence, runDriverLockKey) stay internal.
export { sandboxRunDriver, RunDriverPipeOutsideClaimError } from './driver.js'
export type { SandboxRunDriverOptions } from './driver.js'
export { RunClaimNotAcquiredError, RunClaimLostError, DEFAULT_FENCE_QUIET_MS } from './claim.js'
// Engine-enforced fencing: optional store methods a database store implements so its engine refuses a superseded writer.
export { StaleEpochError, isEpochFencedRunStore, isEpochFencedStreamDurability } from './epoch-fence.js'
export type { EpochFencedRunStore, EpochFencedStreamDurability, RunRecordPatch } from './epoch-fence.js'
// Store authors' helpers for a run log (StreamDurability): where it attaches (a Request's run id and resume offset, the run-id rule),
// and the integer offsets '0', '1', … of a gap-free log (parsing one, planning an upsert batch).
export { resolveResumeOffset, resolveStreamSource } from './stream-source.js'
export type { StreamSourceInit } from './stream-source.js'
export { parseSequenceOffset, planSequenceUpsert } from './sequence-offsets.js'
export { encodeStreamChunks } from './chunk-json.js'
export type { SequenceUpsertStep } from './sequence-offsets.js'
