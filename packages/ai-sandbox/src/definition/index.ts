// Definition: `defineSandbox` and what it rests on: the compound sandbox key,
// the lifecycle (reuse, keepAlive, durations), workspace snapshots and the
// instance store that records which sandbox a key has. Not exported: the
// racing-ensure recorder (claim-record), the destroy/release input checks and
// the long-timeout timer, which are the definition's own machinery.
export { defineSandbox } from './define-sandbox.js'
export type {
  SandboxDefinition,
  SandboxDefinitionInput,
  SandboxEnsureContext,
  SandboxLifecycle,
  SandboxHooks,
  ResolvedSandboxLifecycle,
  SandboxInstanceKeyInput,
  SandboxDestroyResult,
} from './define-sandbox.js'
export { computeSandboxKey } from './sandbox-key.js'
export { workspaceSnapshotKey } from './snapshot-lifecycle.js'
export type { SandboxKeyInput } from './sandbox-key.js'
export { parseDuration } from './duration.js'
export { InMemorySandboxInstanceStore, defineSandboxInstanceStore } from './instance-store.js'
export type { SandboxInstanceStore, SandboxInstanceRecord } from './instance-store.js'
