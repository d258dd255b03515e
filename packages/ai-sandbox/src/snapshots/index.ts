// Portable snapshots, first building block: the capture and restore engine
// (spec 000 "Portable sandbox snapshots"). A workspace becomes a manifest plus
// content-addressed blobs that any store can keep, and goes back into a new
// sandbox on any provider. Not here yet: the checkpoint store contract,
// createSandboxSnapshots and the withSandbox integration, which build on these
// functions. Not exported: the listing, the restore plan, the secret zeroing
// and the sandbox IO they share. Design notes: docs/design/snapshots.md
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
