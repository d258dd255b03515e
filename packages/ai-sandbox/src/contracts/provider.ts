/**
 * `SandboxProvider`: the factory a sandbox definition uses to create, find and
 * delete sandboxes. A provider never knows harness names. Source: spec 000,
 * "Providers".
 */
import type { SandboxCapabilities } from './capabilities.js'
import type { SandboxHandle } from './handle.js'

/** Input of {@link SandboxProvider.create}. */
export interface SandboxCreateInput {
  /** The compound sandbox key this sandbox serves (for labels and diagnostics). */
  key?: string
  /** Labels to attach where the provider supports them. */
  labels?: Record<string, string>
  /** Environment of every process in the sandbox. */
  env?: Record<string, string>
  /**
   * `'blocked'`: create the sandbox without outbound network. `defineSandbox`
   * sets it when its policy denies network (`capabilities: { network: false }`).
   * A provider with the `networkPolicy` capability honours it (Docker: network
   * `none`; Daytona: `networkBlockAll`); one without ignores it. Source: spec 000
   * "Policy" (network block at create).
   */
  network?: 'blocked'
  signal?: AbortSignal
}

/** Input of {@link SandboxProvider.resume}. */
export interface SandboxResumeInput {
  /** The `handle.id` of an earlier sandbox. */
  id: string
  signal?: AbortSignal
}

/** Input of {@link SandboxProvider.restoreSnapshot}. */
export interface SandboxRestoreInput {
  snapshotId: string
  key?: string
  labels?: Record<string, string>
  env?: Record<string, string>
  /** As {@link SandboxCreateInput.network}. */
  network?: 'blocked'
  signal?: AbortSignal
}

/** Input of {@link SandboxProvider.destroy}. */
export interface SandboxDestroyInput {
  id: string
}

/** Creates, finds and deletes sandboxes of one kind. */
export interface SandboxProvider {
  /** Stable provider name, e.g. `local-process`; part of the sandbox key. */
  readonly name: string
  /**
   * Optional stable digest of the provider's configuration (image, user,
   * resources). It joins the sandbox key, so changing it starts a fresh
   * sandbox instead of resuming one built from the old configuration.
   */
  readonly fingerprint?: string
  /** The flags this provider honours. Pure; may be called often. */
  capabilities: () => SandboxCapabilities
  /** Create an empty sandbox with an existing, empty workspace directory. */
  create: (input?: SandboxCreateInput) => Promise<SandboxHandle>
  /** Find a sandbox by id and make it usable again; `null` when it is gone. */
  resume: (input: SandboxResumeInput) => Promise<SandboxHandle | null>
  /** Start a new sandbox from a snapshot (capability `snapshots`; may be present yet throw `UnsupportedCapabilityError` when the flag is false). */
  restoreSnapshot?: (input: SandboxRestoreInput) => Promise<SandboxHandle>
  /** Delete a sandbox by id. Idempotent: a missing sandbox is not an error. */
  destroy: (input: SandboxDestroyInput) => Promise<void>
  /** Delete a snapshot (capability `snapshots`). Idempotent. Core calls it when an after-setup snapshot is replaced. */
  deleteSnapshot?: (input: { snapshotId: string }) => Promise<void>
}
