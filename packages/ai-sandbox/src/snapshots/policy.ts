/**
 * Which workspace paths a portable snapshot keeps: the policy type, the
 * spec's default exclusions, and the classifier capture and restore share
 * (spec 000 "Portable sandbox snapshots"). Pure: no IO. Invariant: the
 * projection marker at the workspace root is excluded whatever the policy
 * says, and an excluded directory takes everything under it along.
 */
import { z } from 'zod'
import { parseOptions } from '../contracts/validate.js'
import { PROJECTION_MARKER } from '../workspace/projection.js'

/** What a path is in the sandbox, as the policy's predicates see it. */
export type SandboxSnapshotEntryType = 'file' | 'directory' | 'symlink' | 'other'

/** The second argument of `include` and `exclude`. */
export interface SandboxSnapshotPathInfo {
  /** `file` (a regular file), `directory`, `symlink`, or `other` (FIFO, socket, device). */
  readonly type: SandboxSnapshotEntryType
}

/**
 * A path rule: `path` is workspace-relative with `/` separators and no
 * leading `./` (e.g. `src/app.ts`, `.env`).
 */
export type SandboxSnapshotPathPredicate = (path: string, entry: SandboxSnapshotPathInfo) => boolean

/** What `redact` receives, once per captured file. */
export interface SandboxSnapshotRedactInput {
  /** The file's workspace-relative path. */
  readonly path: string
  /** The file's content as read from the sandbox (the resolved secret values not yet zeroed). */
  readonly bytes: Uint8Array
  /** The resolved secret values of this capture (what `captureSandboxWorkspace({ secrets })` resolved to), longest first. */
  readonly secrets: readonly string[]
}

/**
 * Which files a portable snapshot stores, and how their bytes are cleaned.
 *
 * - `include(path, entry)`: keep only paths it returns true for. A file that
 *   is kept brings its parent folders along without asking; a folder is
 *   asked only when it would be stored as an empty folder. Default: every path.
 * - `exclude(path, entry)`: drop paths it returns true for; an excluded folder
 *   drops everything under it. Passing it REPLACES the default exclusions
 *   (call `defaultSandboxSnapshotPolicy().exclude` from yours to keep them).
 *   Exclusion wins over `include`.
 * - `redact({ path, bytes, secrets })`: a per-file transform run on every
 *   captured file before the built-in secret zeroing, which always runs after
 *   it (so whatever it returns, no secret form survives). Use it to blank
 *   values the run's secrets do not cover. Default: none.
 *
 * Passing only `include`, or only `redact`, keeps the default exclusions. The
 * projection marker (`.tanstack-projection.json`) at the workspace root is
 * never captured or restored, whatever the policy says.
 */
export interface SandboxSnapshotPolicy {
  include?: SandboxSnapshotPathPredicate
  exclude?: SandboxSnapshotPathPredicate
  redact?: (input: SandboxSnapshotRedactInput) => Uint8Array | Promise<Uint8Array>
}

/** {@link defaultSandboxSnapshotPolicy}'s result: a policy whose `exclude` is always there to call. */
export type DefaultSandboxSnapshotPolicy = SandboxSnapshotPolicy & { readonly exclude: SandboxSnapshotPathPredicate }

/** Folder names (any depth) the default policy drops; `.env*` is a prefix. */
const DEFAULT_EXCLUDED_SEGMENTS = ['.git', 'node_modules'] as const
const DEFAULT_EXCLUDED_PREFIX = '.env'
/** Files at the workspace root the default policy drops: the marker and the projected instructions. */
const DEFAULT_EXCLUDED_ROOT_FILES: ReadonlySet<string> = new Set([PROJECTION_MARKER, 'CLAUDE.md', 'GEMINI.md'])
/** Harness folders whose direct `skills/<name>` entries are projected, so the default policy drops them. */
const PROJECTED_SKILL_ROOTS: ReadonlySet<string> = new Set(['.claude', '.codex', '.grok'])

/** The default `exclude`; a single function object, so capture can tell the default apart and prune in the sandbox. */
const defaultExclude: SandboxSnapshotPathPredicate = (path) => {
  if (DEFAULT_EXCLUDED_ROOT_FILES.has(path)) return true
  const segments = path.split('/')
  if (segments.length >= 3 && PROJECTED_SKILL_ROOTS.has(segments[0]!) && segments[1] === 'skills') return true
  return segments.some((segment) => segment === '.git' || segment === 'node_modules' || segment.startsWith(DEFAULT_EXCLUDED_PREFIX))
}

/**
 * The spec's default snapshot policy: excludes `.git`, `node_modules` and
 * `.env*` path segments at every depth; the projection marker
 * (`.tanstack-projection.json`), `CLAUDE.md` and `GEMINI.md` at the workspace
 * root only; and direct `.claude/skills/<name>`, `.codex/skills/<name>` and
 * `.grok/skills/<name>` paths with everything under them. The rules look at
 * paths only, so a regular file or a copy at such a path is excluded too.
 *
 * @returns A fresh policy object with only `exclude` set; spread it and add
 *   `include` or `redact`, or call its `exclude` from your own.
 * @example
 * ```ts
 * const defaults = defaultSandboxSnapshotPolicy()
 * const policy: SandboxSnapshotPolicy = {
 *   exclude: (path, entry) => defaults.exclude(path, entry) || path === 'dist' || path.startsWith('dist/'),
 * }
 * ```
 */
export function defaultSandboxSnapshotPolicy(): DefaultSandboxSnapshotPolicy {
  return { exclude: defaultExclude }
}

/** What a path is to a snapshot: stored, `out` (not included, yet its descendants are asked), or dropped with its subtree. */
export type SnapshotPathDecision = 'kept' | 'out' | 'excluded'

/** A policy with its defaults applied, as capture and restore use it. */
export interface ResolvedSnapshotPolicy {
  /**
   * Decide one path. An ancestor that is excluded (asked as a directory,
   * once per ancestor and memoized) excludes the path.
   */
  decide: (path: string, entry: SandboxSnapshotPathInfo) => SnapshotPathDecision
  readonly redact: SandboxSnapshotPolicy['redact']
  /**
   * Entry names the sandbox-side listing may prune (with everything under
   * them) without asking: the default exclusions that hold at every depth,
   * set only while `exclude` is the default one. Empty otherwise.
   */
  readonly pruneNames: readonly string[]
}

const predicate = (what: string) => z.custom<SandboxSnapshotPathPredicate>((value) => typeof value === 'function', { message: `expected a function (path, entry) => boolean ${what}` })

const policySchema = z
  .object({
    include: predicate('that returns true for the paths to store').optional(),
    exclude: predicate('that returns true for the paths to drop').optional(),
    redact: z.custom<NonNullable<SandboxSnapshotPolicy['redact']>>((value) => typeof value === 'function', { message: 'expected a function ({ path, bytes, secrets }) => Uint8Array' }).optional(),
  })
  .strict()

/**
 * Apply the defaults to a caller's policy: `exclude` absent means the
 * default exclusions; the root projection marker is excluded in every case.
 *
 * @param policy - The caller's policy, or undefined for the default one.
 * @param field - Dotted name of the option, for validation messages.
 * @throws SandboxConfigError naming the field when a member is not a function or the object has an unknown key.
 */
export function resolveSnapshotPolicy(policy: SandboxSnapshotPolicy | undefined, field: string): ResolvedSnapshotPolicy {
  const parsed = parseOptions(policySchema.optional(), policy, field) ?? {}
  const include = parsed.include
  const exclude = parsed.exclude ?? defaultExclude
  const excluded = (path: string, entry: SandboxSnapshotPathInfo): boolean => path === PROJECTION_MARKER || exclude(path, entry) === true
  const excludedDirs = new Map<string, boolean>()
  const directory: SandboxSnapshotPathInfo = Object.freeze({ type: 'directory' })
  const ancestorExcluded = (path: string): boolean => {
    for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1)) {
      const ancestor = path.slice(0, at)
      let known = excludedDirs.get(ancestor)
      if (known === undefined) excludedDirs.set(ancestor, (known = excluded(ancestor, directory)))
      if (known) return true
    }
    return false
  }
  return {
    decide: (path, entry) => {
      if (ancestorExcluded(path) || excluded(path, entry)) return 'excluded'
      return include === undefined || include(path, entry) === true ? 'kept' : 'out'
    },
    redact: parsed.redact,
    pruneNames: exclude === defaultExclude ? [...DEFAULT_EXCLUDED_SEGMENTS, `${DEFAULT_EXCLUDED_PREFIX}*`] : [],
  }
}
