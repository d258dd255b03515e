// Portable snapshots (spec 000 "Portable sandbox snapshots"): the capture and
// restore engine (a workspace becomes a manifest plus content-addressed blobs
// that any store can keep, and goes back into a new sandbox on any provider),
// the store contracts (messages, artifacts, blobs, checkpoints with head,
// writer lease and fork) with an in-memory implementation, and
// createSandboxSnapshots (save, fork, readArtifact, and what withSandbox uses).
// Not exported: the listing, the restore plan, the secret zeroing and the
// sandbox IO they share. Design notes: docs/design/snapshots.md
export { captureSandboxWorkspace, DEFAULT_SNAPSHOT_MAX_FILE_BYTES } from './capture.js'
export type { CaptureSandboxWorkspaceOptions, SandboxSnapshotCapture } from './capture.js'
export { restoreSandboxWorkspace } from './restore.js'
export type { RestoreSandboxWorkspaceOptions, SandboxSnapshotRestore } from './restore.js'
export { defaultSandboxSnapshotPolicy } from './policy.js'
export type { SandboxSnapshotPolicy, DefaultSandboxSnapshotPolicy, SandboxSnapshotPathPredicate, SandboxSnapshotPathInfo, SandboxSnapshotEntryType, SandboxSnapshotRedactInput } from './policy.js'
export { hashSandboxSnapshotManifest, SANDBOX_SNAPSHOT_MANIFEST_VERSION } from './manifest.js'
export type { SandboxSnapshotManifest, SandboxSnapshotEntry, SandboxSnapshotFileEntry, SandboxSnapshotDirectoryEntry } from './manifest.js'
export { SandboxSnapshotError } from './errors.js'
export type { SandboxSnapshotErrorReason } from './errors.js'
export { createInMemorySandboxPersistence } from './memory-persistence.js'
export type { InMemorySandboxPersistenceOptions } from './memory-persistence.js'
export { defineSandboxSnapshotPersistence } from './stores.js'
export type {
  SandboxArtifact,
  SandboxArtifactStore,
  SandboxBlobAgeOptions,
  SandboxBlobDeleteResult,
  SandboxBlobStore,
  SandboxCheckpoint,
  SandboxCheckpointAppendResult,
  SandboxCheckpointForkResult,
  SandboxCheckpointInput,
  SandboxCheckpointKind,
  SandboxCheckpointLease,
  SandboxCheckpointStore,
  SandboxMessageStore,
  SandboxSnapshotPersistence,
} from './stores.js'
export { createSandboxSnapshots, memorySandboxSnapshots, DEFAULT_SNAPSHOT_LEASE_TTL_MS } from './sandbox-snapshots.js'
export type { SandboxSnapshots, SandboxSnapshotsOptions, MemorySandboxSnapshotsOptions, SandboxSnapshotSaveInput, SandboxSnapshotForkInput, SandboxSnapshotReadArtifactInput } from './sandbox-snapshots.js'
