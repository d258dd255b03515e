// Durability: replay alignment against a run's stored event log, and the chunk identity it compares by.
export { chunkFingerprint, chunkFingerprintIgnoringThreadId, chunkThreadId } from './chunk-identity.js'
export { alignToStoredLog, JournalReplayDivergedError, JournalReplayThreadIdMismatchError, DEFAULT_MAX_OUT_OF_BAND_SKIP } from './align.js'
export type { AlignToStoredLogOptions, JournalReplayDivergedReason } from './align.js'
export { SandboxDurabilityCapability, getSandboxDurability, provideSandboxDurability, journalOptionsFor, alignedIfAttaching } from './capability.js'
export type { SandboxDurabilityOptions, SandboxDurabilityLog, SandboxRunDurability } from './capability.js'
