/**
 * `@tanstack/ai-sandbox/persistence`: the persistence seam portable snapshots
 * need, under our own entry because upstream's `@tanstack/ai-persistence` is
 * not published. `withPersistence` saves each successful run's transcript and
 * reports it to `withSandbox({ snapshots })`; the stores it writes are the
 * ones `createSandboxSnapshots` reads (re-exported here with the in-memory set).
 */
export { withPersistence } from './with-persistence.js'
export { createInMemorySandboxPersistence, defineSandboxSnapshotPersistence } from '../snapshots/index.js'
export type { SandboxSnapshotPersistence, SandboxMessageStore, SandboxArtifactStore, SandboxBlobStore, SandboxCheckpointStore, InMemorySandboxPersistenceOptions } from '../snapshots/index.js'
export { SandboxTranscriptCapability, getSandboxTranscript, provideSandboxTranscript } from '../capabilities/tokens.js'
export type { SandboxTranscriptSignal, SandboxTranscriptOutcome } from '../capabilities/tokens.js'
