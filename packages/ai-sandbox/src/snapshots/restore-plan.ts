/**
 * What a restore changes in the workspace, decided on the host from the
 * manifest, the policy and a listing of what is there: the entries to remove
 * first, the folders the archive must create, the modes to set on empty
 * directories afterwards. Pure. Invariant: inside the policy's scope the
 * workspace ends up exactly as the manifest says (a capture right after the
 * restore, with the same policy, gives the same manifest); outside it nothing
 * is touched except an entry standing where the manifest needs a file or a
 * folder (a symlink there would lead the archive elsewhere).
 */
import type { SandboxSnapshotEntry } from './manifest.js'
import type { ResolvedSnapshotPolicy, SandboxSnapshotEntryType } from './policy.js'
import type { ListedEntry, ListedKind } from './tree-listing.js'

/** The changes {@link planRestore} decides. */
export interface RestorePlan {
  /** Manifest entries the policy keeps, in manifest order. */
  readonly entries: readonly SandboxSnapshotEntry[]
  /** Manifest entries the policy drops (not written). */
  readonly skipped: readonly string[]
  /** Paths to remove (with everything under them) before the archive is extracted; none lies under another. */
  readonly remove: readonly string[]
  /** Folders that hold manifest entries but do not exist yet, parents first: the archive creates them with mode 0755. */
  readonly createDirectories: readonly string[]
}

const INFO_TYPE: Readonly<Record<ListedKind, SandboxSnapshotEntryType>> = { directory: 'directory', file: 'file', executable: 'file', 'too-large': 'file', symlink: 'symlink', other: 'other' }

/**
 * Decide a restore.
 *
 * Removed: every entry the policy keeps that the manifest does not have (a
 * folder only when no manifest entry lies under it); and, whatever the
 * policy says, an entry of the wrong kind at a manifest path or at a folder
 * a manifest entry needs. Entries the policy excludes are left alone, so a
 * new sandbox's `.git` and `node_modules` stay, and so do entries the policy
 * leaves out with `include`.
 *
 * @param manifestEntries - The verified manifest's entries (sorted).
 * @param listed - The workspace as listed now.
 * @param policy - The restore's policy.
 */
export function planRestore(manifestEntries: readonly SandboxSnapshotEntry[], listed: readonly ListedEntry[], policy: ResolvedSnapshotPolicy): RestorePlan {
  const entries: SandboxSnapshotEntry[] = []
  const skipped: string[] = []
  for (const entry of manifestEntries) {
    if (policy.decide(entry.path, { type: entry.type }) === 'kept') entries.push(entry)
    else skipped.push(entry.path)
  }
  const files = new Set<string>()
  const directories = new Set<string>()
  /** Folders the manifest needs: its empty directories and every parent of an entry. */
  const needed = new Set<string>()
  for (const entry of entries) {
    ;(entry.type === 'file' ? files : directories).add(entry.path)
    if (entry.type === 'directory') needed.add(entry.path)
    for (let at = entry.path.indexOf('/'); at !== -1; at = entry.path.indexOf('/', at + 1)) needed.add(entry.path.slice(0, at))
  }
  const existingDirectories = new Set<string>()
  const doomed = new Set<string>()
  for (const { path, kind } of listed) {
    const isFile = kind === 'file' || kind === 'executable' || kind === 'too-large'
    if (kind === 'directory') existingDirectories.add(path)
    if ((files.has(path) && !isFile) || (needed.has(path) && kind !== 'directory')) {
      doomed.add(path)
      continue
    }
    if (policy.decide(path, { type: INFO_TYPE[kind] }) !== 'kept') continue
    if (kind === 'directory' ? !needed.has(path) : !files.has(path)) doomed.add(path)
  }
  const remove = [...doomed].filter((path) => !hasAncestorIn(path, doomed)).sort()
  const createDirectories = [...needed].filter((path) => !existingDirectories.has(path) || doomed.has(path) || hasAncestorIn(path, doomed)).filter((path) => !directories.has(path))
  createDirectories.sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : a > b ? 1 : 0))
  return { entries, skipped, remove, createDirectories }
}

function hasAncestorIn(path: string, set: ReadonlySet<string>): boolean {
  for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1)) if (set.has(path.slice(0, at))) return true
  return false
}
