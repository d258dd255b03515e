/**
 * Projection: each harness turns the workspace's skills, MCP servers and
 * plugins into its CLI's own files and flags. A harness is one
 * `HarnessProjection` module in its adapter package; core runs its `write`
 * once per workspace hash (guarded by a marker file at the workspace root)
 * and its `args` on every run. `WorkspaceProjection` is what `withSandbox`
 * provides to adapters through `ProjectionCapability`.
 */
import { createHmac, randomBytes } from 'node:crypto'

import type { SandboxHandle } from '../contracts/handle.js'
import type { ResolvedWorkspace } from './define-workspace.js'
import { shellQuote } from '../shell/quote.js'
import type { SandboxPolicy } from './policy.js'
import { isSecretRef, resolveSecret, type SecretRef } from '../contracts/secret-ref.js'

/** The marker file (workspace root) recording which harness projected which workspace hash. */
export const PROJECTION_MARKER = '.tanstack-projection.json'

/** What a harness projection gets to work with. */
export interface ProjectionContext {
  readonly handle: SandboxHandle
  readonly workspace: ResolvedWorkspace
  /** A header/env value with secret references resolved. Use only for files the CLI must read. */
  resolve: (value: string | SecretRef) => string
  /** Report a skill or plugin this harness has no concept of (a `console.warn`, never an error). */
  warn: (message: string) => void
  /** The sandbox's policy, for files whose content depends on it (e.g. approving MCP tools when the policy allows everything). Part of the projection's stamp. */
  readonly policy?: SandboxPolicy
}

/** One harness's projection: files written once per workspace hash, flags computed every run. */
export interface HarnessProjection {
  /** Harness name, e.g. `claude-code`; the marker is kept per harness. */
  readonly harness: string
  /** Write the harness's files (MCP config, skill folders). */
  write: (ctx: ProjectionContext) => Promise<void>
  /** Extra CLI arguments for this run (e.g. `--mcp-config .mcp.json`). Default: none. */
  args?: (ctx: ProjectionContext) => Promise<string[]>
  /** Workspace-relative paths `write` creates; they are kept out of git status (`.git/info/exclude`). */
  paths?: readonly string[]
}

/** What `withSandbox` provides to harness adapters about the run's workspace. */
export interface WorkspaceProjection {
  /** The definition's workspace (secret values are references, not strings). */
  readonly workspace: ResolvedWorkspace
  /** Digest of the workspace definition without secret values. */
  readonly workspaceHash: string
  /** The workspace directory as processes inside the sandbox see it. */
  readonly workspaceRoot: string
  /**
   * Resolve `workspace.secrets` to environment variables (`NAME=value`) for a
   * process the adapter starts. Call it at spawn time; never store the result.
   */
  resolveSecretEnv: () => Record<string, string>
  /** Run a harness projection (its `write` only when this workspace hash was not projected for it yet); returns its CLI arguments. */
  project: (projection: HarnessProjection) => Promise<{ args: string[] }>
}

/**
 * Run `projection` against `handle` unless the marker says this workspace hash
 * is already projected for that harness.
 * @returns The projection's CLI arguments for this run.
 */
export async function projectWorkspace(handle: SandboxHandle, workspace: ResolvedWorkspace, projection: HarnessProjection, warn: (message: string) => void = (m) => console.warn(m), policy?: SandboxPolicy): Promise<{ args: string[] }> {
  const ctx: ProjectionContext = {
    handle,
    workspace,
    ...(policy ? { policy } : {}),
    resolve: (value) => (isSecretRef(value) ? resolveSecret(value) : value),
    warn: (message) => warn(`[${projection.harness}] ${message}`),
  }
  // Nothing declared, nothing written: no marker in a workspace that needs none.
  const declared = workspace.skills.length > 0 || workspace.plugins.length > 0
  const marker = declared ? await readMarker(handle) : {}
  const stamp = projectionStamp(workspace, policy)
  if (declared && marker[projection.harness] !== stamp) {
    await projection.write(ctx)
    await handle.fs.write(PROJECTION_MARKER, `${JSON.stringify({ ...marker, [projection.harness]: stamp }, null, 2)}\n`)
    await excludeFromGit(handle, [PROJECTION_MARKER, ...(projection.paths ?? [])])
  }
  return { args: projection.args ? await projection.args(ctx) : [] }
}

/**
 * Random per process: secret digests in markers cannot be checked against
 * guesses offline. Made on first use, not at module load, which the Workers
 * runtime forbids (docs/design/cloudflare.md).
 */
let stampKey: Buffer | undefined

/**
 * What the marker records: the workspace hash plus a keyed digest of the
 * resolved secret values and the policy, so a rotated secret (same name, new value) is
 * projected again. Another process's stamps never match, so a new process
 * projects once more.
 */
function projectionStamp(workspace: ResolvedWorkspace, policy: SandboxPolicy | undefined): string {
  const values = Object.keys(workspace.secrets)
    .sort()
    .map((name) => `${name}=${resolveSecret(workspace.secrets[name]!)}`)
    .join('\n')
  const digest = createHmac('sha256', (stampKey ??= randomBytes(32))).update(values).update(`\npolicy=${JSON.stringify(policy ?? null)}`).digest('hex').slice(0, 32)
  return `${workspace.hash}:${digest}`
}

/**
 * Keep generated paths out of `git status` by listing them in
 * `.git/info/exclude` (never `.gitignore`, which belongs to the project).
 * Does nothing when the workspace root is not a git repository.
 */
export async function excludeFromGit(handle: SandboxHandle, paths: readonly string[]): Promise<void> {
  const lines = paths.map((p) => `/${p.replace(/^\/+/, '')}`)
  const script = `[ -d .git/info ] || exit 0\nfor line in ${lines.map(shellQuote).join(' ')}; do grep -qxF "$line" .git/info/exclude 2>/dev/null || printf '%s\\n' "$line" >> .git/info/exclude; done`
  await handle.process.exec(script)
}

async function readMarker(handle: SandboxHandle): Promise<Record<string, string>> {
  if (!(await handle.fs.exists(PROJECTION_MARKER))) return {}
  try {
    const parsed: unknown = JSON.parse(await handle.fs.read(PROJECTION_MARKER))
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, string>) : {}
  } catch {
    return {} // a damaged marker only means projecting again
  }
}

