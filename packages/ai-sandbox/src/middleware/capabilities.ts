/**
 * Capability tokens the sandbox layer owns. `SandboxCapability` is provided by
 * `withSandbox` and required by harness adapters (`requires: [SandboxCapability]`);
 * the others carry the policy, projection and tool-bridge transport. Locks
 * come from `@tanstack/ai/locks` and are not re-exported.
 */
import { createCapability } from '@tanstack/ai'
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
