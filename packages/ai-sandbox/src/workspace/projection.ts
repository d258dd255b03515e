/**
 * `WorkspaceProjection`: the resolved workspace a harness adapter projects into
 * its CLI's own files and flags. Provided by `withSandbox` for every run.
 */
import { createCapability } from '@tanstack/ai'
import type { ResolvedWorkspace } from './define-workspace.js'

/** What a harness adapter needs to know about the workspace of this run. */
export interface WorkspaceProjection {
  /** The definition's workspace (secret values are references, not strings). */
  readonly workspace: ResolvedWorkspace
  /** Digest of the workspace definition without secret values. */
  readonly workspaceHash: string
  /** The workspace directory as processes inside the sandbox see it. */
  readonly workspaceRoot: string
  /**
   * Resolve `workspace.secrets` to environment variables (`NAME=value`) for a
   * process the adapter starts, e.g. an API key for the agent CLI. Call it at
   * spawn time; never store the result.
   */
  resolveSecretEnv: () => Record<string, string>
}

/** The projection capability, provided by `withSandbox`, read by harness adapters. */
export const ProjectionCapability = createCapability<WorkspaceProjection>()('sandbox-projection')

/** Accessors of {@link ProjectionCapability}. */
export const [getProjection, provideProjection] = ProjectionCapability
