/**
 * Workspace sources: where a new sandbox's files come from. A git repository
 * (shallow by default), a host directory, or nothing. Validation of URLs and
 * depths happens here so a bad source fails at definition time, not in a
 * half-made sandbox. Source: spec 000, "Fast init".
 */
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { gitRefSchema } from '../git/ref-name.js'
import { isSecretRef, type SecretRef } from '../contracts/secret-ref.js'

/** Clone a git repository into the workspace root. */
export interface GitWorkspaceSource {
  readonly type: 'git'
  /** https, http, ssh, `git@host:owner/repo` or file URL. */
  readonly url: string
  /** Branch or tag, as `git check-ref-format` accepts it (no leading `-`, spaces, `..`, `~^:?*[\`). Default: the remote's default branch. */
  readonly ref?: string
  /** Commits of history: a positive number or `'full'`. Default `1` (`--depth 1 --single-branch`). */
  readonly depth?: number | 'full'
  /** HTTPS token for a private repository; sent as a header, never stored in `.git/config`. */
  readonly secret?: SecretRef
}

/** Copy a host directory into the workspace. */
export interface LocalWorkspaceSource {
  readonly type: 'local'
  /** Absolute or cwd-relative host path of the directory to copy. */
  readonly path: string
  /** Top-level or nested directory/file names to skip. Default `['node_modules']`. */
  readonly ignore?: readonly string[]
}

/** Start with an empty workspace. */
export interface EmptyWorkspaceSource {
  readonly type: 'empty'
}

/** Where the workspace's initial files come from. */
export type WorkspaceSource = GitWorkspaceSource | LocalWorkspaceSource | EmptyWorkspaceSource

const GIT_URL =
  /^(?:(?:https?|ssh|git):\/\/[^\s/]+\/\S+|file:\/\/\/\S+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+)$/

const secretRef = z.custom<SecretRef>((value) => isSecretRef(value), {
  message: 'expected a secret reference from createSecrets(), e.g. secrets.GH',
})

const depth = z.union(
  [z.number().int('must be a whole number').positive('must be at least 1'), z.literal('full')],
  { error: "expected a positive whole number of commits or 'full'" },
)

/** The zod schema of a git source (also used by `defineWorkspace`). */
export const gitSourceSchema = z
  .object({
    type: z.literal('git'),
    url: z.string().regex(GIT_URL, {
      message:
        'expected a git URL such as https://github.com/owner/repo.git, git@github.com:owner/repo.git or file:///absolute/path/to/repo; for GitHub use githubRepo({ repo: "owner/name" })',
    }).refine((url) => !/^https?:\/\/[^/\s]*@/i.test(url), {
      message: 'do not put credentials in the URL (git would store them in .git/config); pass the token as gitSource({ url, secret: secrets.TOKEN })',
    }),
    ref: gitRefSchema.optional(),
    depth: depth.optional(),
    secret: secretRef.optional(),
  })
  .strict()

/** The zod schema of a local source. */
export const localSourceSchema = z
  .object({
    type: z.literal('local'),
    path: z.string().min(1, 'expected the host directory to copy'),
    ignore: z.array(z.string().min(1)).optional(),
  })
  .strict()

/** The zod schema of any workspace source. */
export const sourceSchema = z.discriminatedUnion('type', [
  gitSourceSchema,
  localSourceSchema,
  z.object({ type: z.literal('empty') }).strict(),
], { error: "expected a source with type 'git', 'local' or 'empty' (use gitSource, githubRepo, localSource or emptySource)" })

/**
 * A git source for any remote.
 *
 * @param input - `url` (required), `ref`, `depth` (default 1; `'full'` for all history), `secret` for private HTTPS remotes.
 * @throws SandboxConfigError `source.url` for a malformed URL, `source.ref` for a ref git would refuse (or read as an option), `source.depth` for a bad depth.
 * @example
 * ```ts
 * defineWorkspace({ source: gitSource({ url: 'https://gitlab.com/acme/app.git', ref: 'main' }) })
 * ```
 */
export function gitSource(input: Omit<GitWorkspaceSource, 'type'>): GitWorkspaceSource {
  return parseOptions(gitSourceSchema, { type: 'git', ...input }, 'source') as GitWorkspaceSource
}

/**
 * A GitHub repository by `owner/name`.
 *
 * @param input - `repo` as `owner/name`, plus `ref`, `depth` (default 1) and `secret` as {@link gitSource}.
 * @throws SandboxConfigError `source.repo` when `repo` is not `owner/name`.
 * @example
 * ```ts
 * defineWorkspace({ source: githubRepo({ repo: 'owner/app', depth: 'full' }) })
 * ```
 */
export function githubRepo(input: { repo: string } & Omit<GitWorkspaceSource, 'type' | 'url'>): GitWorkspaceSource {
  const { repo, ...rest } = parseOptions(
    z.object({ repo: z.string().regex(/^(?!\.{1,2}\/)[A-Za-z0-9_.-]+\/(?!\.{1,2}$)[A-Za-z0-9_.-]+$/, 'expected "owner/name", e.g. "tanstack/ai"') }).passthrough(),
    input,
    'source',
  )
  return gitSource({ url: `https://github.com/${repo}.git`, ...(rest as Omit<GitWorkspaceSource, 'type' | 'url'>) })
}

/**
 * Copy a host directory into each new sandbox.
 * @param input - `path` of the directory; `ignore` names to skip (default `['node_modules']`).
 */
export function localSource(input: Omit<LocalWorkspaceSource, 'type'>): LocalWorkspaceSource {
  return parseOptions(localSourceSchema, { type: 'local', ...input }, 'source') as LocalWorkspaceSource
}

/** An empty workspace (the default source). */
export function emptySource(): EmptyWorkspaceSource {
  return { type: 'empty' }
}
