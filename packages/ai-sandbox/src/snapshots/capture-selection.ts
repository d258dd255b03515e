/**
 * The first half of a capture, on the host: the policy applied to the
 * workspace listing. Decides what is stored (kept files, and kept folders
 * with nothing kept under them) and runs every check that can fail a
 * capture before a single blob is put. Pure.
 */
import { SandboxSnapshotError } from './errors.js'
import { comparePaths } from './manifest.js'
import type { ResolvedSnapshotPolicy, SandboxSnapshotEntryType } from './policy.js'
import type { SnapshotScratch } from './sandbox-io.js'
import type { SecretZeroer } from './secret-zeroing.js'
import type { ListedEntry, ListedKind } from './tree-listing.js'

/** One entry chosen for the archive, in manifest order. */
export interface ChosenEntry {
  readonly path: string
  readonly type: 'file' | 'directory'
}

const INFO_TYPE: Readonly<Record<ListedKind, SandboxSnapshotEntryType>> = { directory: 'directory', file: 'file', executable: 'file', 'too-large': 'file', symlink: 'symlink', other: 'other' }

/** How a kept entry of a refused kind fails the capture. */
interface Refusal {
  readonly reason: 'symlink' | 'executable' | 'special-file' | 'file-too-large'
  readonly what: string
}

const REFUSED: Partial<Record<ListedKind, Refusal>> = {
  symlink: { reason: 'symlink', what: 'is a symlink' },
  executable: { reason: 'executable', what: 'is an executable file (an x bit is set)' },
  other: { reason: 'special-file', what: 'is a special file (FIFO, socket or device)' },
  'too-large': { reason: 'file-too-large', what: 'is larger than maxFileBytes' },
}

/**
 * Apply the policy to the listing: the kept files, and the kept directories
 * with nothing kept under them (the empty directories to store), sorted by
 * path. Every check that can fail the capture runs here, before any blob is put.
 */
export function chooseEntries(scratch: SnapshotScratch, listed: readonly ListedEntry[], policy: ResolvedSnapshotPolicy, zeroer: SecretZeroer): ChosenEntry[] {
  const kept: ListedEntry[] = []
  const directories: ListedEntry[] = []
  const refused: (Refusal & { entry: ListedEntry })[] = []
  for (const entry of listed) {
    if (entry.kind === 'directory') {
      directories.push(entry)
      continue
    }
    if (policy.decide(entry.path, { type: INFO_TYPE[entry.kind] }) !== 'kept') continue
    const refusal = REFUSED[entry.kind]
    if (refusal) refused.push({ entry, ...refusal })
    else kept.push(entry)
  }
  if (refused.length > 0) {
    refused.sort((a, b) => comparePaths(a.entry.path, b.entry.path))
    const first = refused[0]!
    const more = refused.length > 1 ? ` (and ${refused.length - 1} more: ${refused.slice(1, 6).map((r) => JSON.stringify(r.entry.path)).join(', ')}${refused.length > 6 ? ', ...' : ''})` : ''
    throw new SandboxSnapshotError(
      first.reason,
      `${scratch.operation}: ${JSON.stringify(first.entry.path)} ${first.what}${more}; a portable snapshot stores only regular files without x bits and empty directories, and nothing was stored. Remove it, or exclude it with the snapshot policy.`,
      { path: first.entry.path },
    )
  }
  // Folders holding a kept file are implied; a folder is stored only when nothing under it is kept.
  const holdsKept = new Set<string>()
  for (const entry of kept) markAncestors(entry.path, holdsKept)
  // Deepest first, so a folder stored as empty makes its parents non-empty.
  const empty = directories
    .sort((a, b) => b.path.length - a.path.length)
    .filter((entry) => {
      if (holdsKept.has(entry.path) || policy.decide(entry.path, { type: 'directory' }) !== 'kept') return false
      markAncestors(entry.path, holdsKept)
      return true
    })
  const chosen: ChosenEntry[] = [...kept.map((entry) => ({ path: entry.path, type: 'file' as const })), ...empty.map((entry) => ({ path: entry.path, type: 'directory' as const }))].sort((a, b) => comparePaths(a.path, b.path))
  const secretPath = chosen.find((entry) => zeroer.holdsSecret(entry.path))
  if (secretPath) {
    const shown = scratch.scrub(secretPath.path)
    throw new SandboxSnapshotError('secret-in-path', `${scratch.operation}: the path ${JSON.stringify(shown)} holds a secret value, which a snapshot cannot zero in a name; nothing was stored. Rename it, or exclude it with the snapshot policy.`, { path: shown })
  }
  return chosen
}

function markAncestors(path: string, into: Set<string>): void {
  for (let at = path.lastIndexOf('/'); at > 0; at = path.lastIndexOf('/', at - 1)) {
    const ancestor = path.slice(0, at)
    if (into.has(ancestor)) return
    into.add(ancestor)
  }
}
