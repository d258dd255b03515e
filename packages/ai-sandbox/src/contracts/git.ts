/**
 * The git contract of a sandbox handle. Auth tokens are passed per call and
 * never persisted: not in `.git/config`, not in remote URLs, not in errors.
 */
import type { SecretRef } from './secret-ref.js'

/** Credentials for a remote operation. */
export interface GitAuth {
  /** An HTTPS token (a {@link SecretRef} or its resolved value). Sent as an HTTP header, never stored. */
  token: SecretRef | string
  /** User name for basic auth. Default `x-access-token` (GitHub, Gitea and GitLab accept it). */
  username?: string
}

/** Options of {@link SandboxGit.clone}. */
export interface GitCloneOptions {
  /** Remote URL: https, http, ssh, `git@host:path` or file. */
  url: string
  /** Target directory inside the sandbox. Default: the workspace root (which must be empty). */
  dir?: string
  /** Branch or tag to check out (passed as `--branch=<ref>`, never read as an option). Default: the remote's default branch. */
  ref?: string
  /** History depth: a positive number of commits or `'full'`. Default `1` with `--single-branch`. */
  depth?: number | 'full'
  auth?: GitAuth
}

/** One changed path in {@link GitStatus}. */
export interface GitStatusEntry {
  /** Path relative to the repository root. */
  readonly path: string
  /** Two-letter porcelain code, e.g. ` M`, `??`, `A `. */
  readonly code: string
}

/** The working-tree state. */
export interface GitStatus {
  /** Current branch, or `null` when HEAD is detached. */
  readonly branch: string | null
  /** True when nothing is staged, changed or untracked. */
  readonly clean: boolean
  readonly entries: readonly GitStatusEntry[]
}

/** Options of remote operations other than clone. */
export interface GitRemoteOptions {
  /** Remote name. Default `origin`. A value starting with `-` is refused (`SandboxConfigError`): git would read it as an option. */
  remote?: string
  /** Branch. Default: the current branch. A value starting with `-` is refused, like `remote`. */
  branch?: string
  auth?: GitAuth
  /** Repository directory. Default: the workspace root. */
  dir?: string
}

/** Git operations inside the sandbox. All take an optional repository `dir` (default: the workspace root). */
export interface SandboxGit {
  clone: (options: GitCloneOptions) => Promise<void>
  status: (options?: { dir?: string }) => Promise<GitStatus>
  /** Stage paths (default: everything, `-A`). */
  add: (paths?: readonly string[], options?: { dir?: string }) => Promise<void>
  /** Commit staged changes; returns the new commit sha. */
  commit: (message: string, options?: { dir?: string; author?: { name: string; email: string }; allowEmpty?: boolean }) => Promise<{ sha: string }>
  push: (options?: GitRemoteOptions) => Promise<void>
  pull: (options?: GitRemoteOptions) => Promise<void>
  /** Create a branch from HEAD (and check it out unless `checkout: false`); without a name, return the current branch. */
  branch: (name?: string, options?: { dir?: string; checkout?: boolean }) => Promise<{ name: string | null }>
}
