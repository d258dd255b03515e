// Definition: defineSandbox, the compound key, lifecycle, instance store.
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
