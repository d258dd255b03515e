/**
 * Every capability token the sandbox layer owns, with its accessors: where
 * `withSandbox`, harness adapters and platform middleware meet. `withSandbox`
 * provides the sandbox, policy, projection, run chunks and (durable runs)
 * durability; an app may provide the instance store and the tool-bridge
 * transport. Locks come from `@tanstack/ai/locks` and are not re-exported.
 */
import { createCapability, type StreamChunk } from '@tanstack/ai'
import type { SandboxHandle } from '../contracts/handle.js'
import type { ToolBridgeProvisioner } from '../bridge/provisioner.js'
import type { SandboxInstanceStore } from '../definition/instance-store.js'
import type { SandboxRunDurability } from '../durability/capability.js'
import type { SandboxSnapshotPersistence } from '../snapshots/stores.js'
import type { SandboxPolicy } from '../workspace/policy.js'
import type { WorkspaceProjection } from '../workspace/projection.js'

/** The live sandbox of the run. Harness adapters read it with {@link getSandbox}. */
export const SandboxCapability = createCapability<SandboxHandle>()('sandbox')

/** Accessors of {@link SandboxCapability}: `getSandbox(options.capabilities)` inside `chatStream`. */
export const [getSandbox, provideSandbox] = SandboxCapability

/** Lets an application inject its own tool-bridge transport (default: the host transport). */
export const ToolBridgeProvisionerCapability = createCapability<ToolBridgeProvisioner>()('tool-bridge-provisioner')

/** Accessors of {@link ToolBridgeProvisionerCapability}. */
export const [getToolBridgeProvisioner, provideToolBridgeProvisioner] = ToolBridgeProvisionerCapability

/**
 * Live chunks of the run that a harness adapter merges into its own stream
 * (with `mergeChunkStreams`, never waiting on it): `withSandbox` provides it
 * per run so its side channel (the `sandbox.file` events) reaches the client
 * while the agent is silent. Ends at the run's terminal hook.
 */
export const SandboxRunChunksCapability = createCapability<AsyncIterable<StreamChunk>>()('sandbox-run-chunks')

/** Accessors of {@link SandboxRunChunksCapability}: `getSandboxRunChunks(options.capabilities, { optional: true })`. */
export const [getSandboxRunChunks, provideSandboxRunChunks] = SandboxRunChunksCapability

/**
 * The ambient instance store. `withSandbox(sandbox, { instances })` wins over
 * it; it wins over the in-memory fallback. Provide it from a platform
 * middleware with {@link provideSandboxInstanceStore}.
 */
export const SandboxInstanceStoreCapability = createCapability<SandboxInstanceStore>()('sandbox-instance-store')

/** Accessors of {@link SandboxInstanceStoreCapability}. */
export const [getSandboxInstanceStore, provideSandboxInstanceStore] = SandboxInstanceStoreCapability

/** The active policy, provided by `withSandbox`; harness adapters read it. */
export const SandboxPolicyCapability = createCapability<SandboxPolicy>()('sandbox-policy')

/** Accessors of {@link SandboxPolicyCapability}. */
export const [getSandboxPolicy, provideSandboxPolicy] = SandboxPolicyCapability

/** The projection capability, provided by `withSandbox`, read by harness adapters. */
export const ProjectionCapability = createCapability<WorkspaceProjection>()('sandbox-projection')

/** Accessors of {@link ProjectionCapability}. */
export const [getProjection, provideProjection] = ProjectionCapability

/** Carries a durable run's {@link SandboxRunDurability}; absent on a run that is not durable. */
export const SandboxDurabilityCapability = createCapability<SandboxRunDurability>()('sandbox-durability')

/** Accessors of {@link SandboxDurabilityCapability}: `getSandboxDurability(options.capabilities, { optional: true })`. */
export const [getSandboxDurability, provideSandboxDurability] = SandboxDurabilityCapability

/** What `withPersistence` reports of one run's transcript once its `onFinish` ran: saved (with the count it covers), or not. */
export type SandboxTranscriptOutcome = { readonly saved: true; readonly messageCount: number } | { readonly saved: false; readonly error?: unknown }

/**
 * The transcript signal of one run, provided by `withPersistence` (from
 * `@tanstack/ai-sandbox/persistence`): the persistence value it writes to, and
 * a promise that settles when its `onFinish` stored the finished turn (or
 * failed to). `withSandbox({ snapshots })` waits for it so a checkpoint covers
 * the finished turn, and writes none when the transcript was not saved.
 */
export interface SandboxTranscriptSignal {
  readonly persistence: SandboxSnapshotPersistence
  readonly outcome: Promise<SandboxTranscriptOutcome>
  /**
   * Register a text scrubber every string of the stored transcript passes
   * through: `withSandbox` gives its run's secret scrubber here, so no
   * workspace secret (raw or encoded) is stored, whatever reached the
   * messages unscrubbed.
   */
  readonly redactWith: (scrub: (text: string) => string) => void
}

/** Carries a run's {@link SandboxTranscriptSignal}; provided by `withPersistence`. */
export const SandboxTranscriptCapability = createCapability<SandboxTranscriptSignal>()('sandbox-transcript')

/** Accessors of {@link SandboxTranscriptCapability}. */
export const [getSandboxTranscript, provideSandboxTranscript] = SandboxTranscriptCapability
