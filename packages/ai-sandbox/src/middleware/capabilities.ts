/**
 * Capability tokens the sandbox layer owns. `SandboxCapability` is provided by
 * `withSandbox` and required by harness adapters (`requires: [SandboxCapability]`);
 * the others carry the policy, projection and tool-bridge transport. Locks
 * come from `@tanstack/ai/locks` and are not re-exported.
 */
import { createCapability, type StreamChunk } from '@tanstack/ai'
import type { SandboxHandle } from '../contracts/handle.js'
import type { ToolBridgeProvisioner } from '../bridge/provisioner.js'

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
