/**
 * The manifest of a portable snapshot: its entry types, the path order, the
 * canonical JSON its SHA-256 is taken over, and the checks a restore runs on
 * a manifest it did not make. Pure: no IO. Invariant: a manifest that passes
 * {@link verifySnapshotManifest} names only safe, distinct, sorted paths, and
 * hashing the same entries always gives the same `manifestSha256`.
 */
import { createHash } from 'node:crypto'
import { z } from 'zod'
import { SandboxSnapshotError } from './errors.js'

/** The manifest format this package writes and reads. */
export const SANDBOX_SNAPSHOT_MANIFEST_VERSION = 1

/** A regular file of the snapshot; its bytes are the blob named by `sha256`. */
export interface SandboxSnapshotFileEntry {
  /** Workspace-relative, `/`-separated, e.g. `src/app.ts`. */
  readonly path: string
  readonly type: 'file'
  /** Permission bits, e.g. `0o644`; never an x bit, setuid, setgid or sticky bit. */
  readonly mode: number
  /** Bytes stored (after secret zeroing and `redact`). */
  readonly size: number
  /** Lowercase hex SHA-256 of the stored bytes: the blob's key. */
  readonly sha256: string
}

/** An empty directory of the snapshot (directories that hold stored entries are implied by their paths). */
export interface SandboxSnapshotDirectoryEntry {
  readonly path: string
  readonly type: 'directory'
  /** Permission bits, e.g. `0o755` (setuid, setgid and sticky bits are not kept). */
  readonly mode: number
}

/** One entry of a {@link SandboxSnapshotManifest}. */
export type SandboxSnapshotEntry = SandboxSnapshotFileEntry | SandboxSnapshotDirectoryEntry

/**
 * What a portable snapshot holds: every stored regular file and empty
 * directory, sorted by path (UTF-8 byte order). Content only: no times, owners
 * or provider, so the same tree always gives the same manifest.
 */
export interface SandboxSnapshotManifest {
  readonly version: typeof SANDBOX_SNAPSHOT_MANIFEST_VERSION
  readonly entries: readonly SandboxSnapshotEntry[]
}

/** Linux's limits: a name of at most 255 bytes, a path of at most 4095. */
const MAX_NAME_BYTES = 255
const MAX_PATH_BYTES = 4095

/**
 * Compare two paths by their UTF-8 bytes (which is code point order) without
 * encoding them: UTF-16 code units order the same way except that surrogates
 * must sort above U+E000..U+FFFF.
 */
export function comparePaths(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointRank(x) - codePointRank(y)
  }
  return a.length - b.length
}

function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800
  if (unit >= 0xd800) return unit + 0x2000
  return unit
}

/** The manifest as the one JSON text its hash covers: fixed key order, no whitespace. */
function canonicalJson(manifest: SandboxSnapshotManifest): string {
  return JSON.stringify({
    version: manifest.version,
    entries: manifest.entries.map((entry) => (entry.type === 'file' ? { path: entry.path, type: entry.type, mode: entry.mode, size: entry.size, sha256: entry.sha256 } : { path: entry.path, type: entry.type, mode: entry.mode })),
  })
}

/**
 * The SHA-256 (lowercase hex) of a manifest's canonical JSON: keys in the
 * order `version, entries` and `path, type, mode[, size, sha256]`, no
 * whitespace, unknown fields left out. `captureSandboxWorkspace` returns it
 * as `manifestSha256`; `restoreSandboxWorkspace` refuses a manifest whose
 * hash differs. Store it beside the manifest.
 *
 * @param manifest - A manifest as capture returned it (or parsed back from JSON).
 * @returns 64 lowercase hex digits.
 * @example
 * ```ts
 * const { manifest, manifestSha256 } = await captureSandboxWorkspace(handle, { putBlob })
 * hashSandboxSnapshotManifest(JSON.parse(JSON.stringify(manifest))) === manifestSha256 // true
 * ```
 */
export function hashSandboxSnapshotManifest(manifest: SandboxSnapshotManifest): string {
  return createHash('sha256').update(canonicalJson(manifest), 'utf8').digest('hex')
}

const entrySchema = z.discriminatedUnion('type', [
  z.object({ path: z.string(), type: z.literal('file'), mode: z.number().int(), size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER), sha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits') }).strict(),
  z.object({ path: z.string(), type: z.literal('directory'), mode: z.number().int() }).strict(),
])

const manifestSchema = z.object({ version: z.literal(SANDBOX_SNAPSHOT_MANIFEST_VERSION), entries: z.array(entrySchema) }).strict()

/**
 * Why `path` may not be written into a workspace, or undefined when it may:
 * it must be relative, `/`-separated, without `.`, `..` or empty segments,
 * NUL bytes or unpaired surrogates, and within Linux's name and path lengths.
 */
export function unsafePathReason(path: string): string | undefined {
  if (path === '') return 'it is empty'
  if (path.includes('\0')) return 'it holds a NUL byte'
  if (path.startsWith('/')) return 'it is absolute'
  // In a `u` regular expression a surrogate pair is one code point, so this matches only unpaired surrogates.
  if (/\p{Cs}/u.test(path)) return 'it is not valid Unicode'
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `it is longer than ${MAX_PATH_BYTES} bytes`
  for (const segment of path.split('/')) {
    if (segment === '') return 'it has an empty segment (a trailing or doubled "/")'
    if (segment === '.' || segment === '..') return `it has a "${segment}" segment`
    if (Buffer.byteLength(segment) > MAX_NAME_BYTES) return `a name in it is longer than ${MAX_NAME_BYTES} bytes`
  }
  return undefined
}

/**
 * Check a manifest a restore was handed: its shape, its hash, then every
 * path and the rules capture keeps (sorted distinct paths, nothing under a
 * file or under a directory entry, file modes without x bits).
 *
 * @param value - The manifest as stored (any value).
 * @param manifestSha256 - The hash stored beside it.
 * @param maxFileBytes - The largest file size accepted.
 * @returns The manifest, typed.
 * @throws SandboxSnapshotError `invalid-manifest`, `manifest-hash-mismatch` or `unsafe-path`, naming the entry.
 */
export function verifySnapshotManifest(value: unknown, manifestSha256: string, maxFileBytes: number): SandboxSnapshotManifest {
  const parsed = manifestSchema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    throw new SandboxSnapshotError('invalid-manifest', `restoreSandboxWorkspace: the manifest is not a version ${SANDBOX_SNAPSHOT_MANIFEST_VERSION} snapshot manifest (at ${issue.path.join('.') || 'the top'}: ${issue.message}); nothing was written. Pass the manifest captureSandboxWorkspace returned, as stored.`, { cause: parsed.error })
  }
  const manifest = parsed.data as SandboxSnapshotManifest
  const actual = hashSandboxSnapshotManifest(manifest)
  if (actual !== manifestSha256) {
    throw new SandboxSnapshotError('manifest-hash-mismatch', `restoreSandboxWorkspace: the manifest's SHA-256 is ${actual}, not the expected ${JSON.stringify(manifestSha256)}: it was changed or belongs to another snapshot; nothing was written.`)
  }
  const paths = new Set<string>()
  let previous: string | undefined
  for (const entry of manifest.entries) {
    const unsafe = unsafePathReason(entry.path)
    if (unsafe !== undefined) throw new SandboxSnapshotError('unsafe-path', `restoreSandboxWorkspace: manifest entry ${JSON.stringify(entry.path)} cannot be written into a workspace: ${unsafe}; nothing was written.`, { path: entry.path })
    if (previous !== undefined && comparePaths(previous, entry.path) >= 0) throw invalidEntry(entry.path, `it is out of order or repeated (after ${JSON.stringify(previous)}); entries are sorted by path and distinct`)
    const allowed = entry.type === 'file' ? 0o666 : 0o777
    if ((entry.mode & ~allowed) !== 0 || entry.mode < 0) throw invalidEntry(entry.path, `mode 0o${entry.mode.toString(8)} is not allowed for a ${entry.type} (at most 0o${allowed.toString(8)}: ${entry.type === 'file' ? 'no x bits, ' : ''}no setuid, setgid or sticky bit)`)
    if (entry.type === 'file' && entry.size > maxFileBytes) throw invalidEntry(entry.path, `its size ${entry.size} is over maxFileBytes (${maxFileBytes})`)
    for (let at = entry.path.indexOf('/'); at !== -1; at = entry.path.indexOf('/', at + 1)) {
      if (paths.has(entry.path.slice(0, at))) throw invalidEntry(entry.path, `it lies under the entry ${JSON.stringify(entry.path.slice(0, at))}, which is a file or an empty directory`)
    }
    paths.add(entry.path)
    previous = entry.path
  }
  return manifest
}

function invalidEntry(path: string, why: string): SandboxSnapshotError {
  return new SandboxSnapshotError('invalid-manifest', `restoreSandboxWorkspace: manifest entry ${JSON.stringify(path)} is invalid: ${why}; nothing was written.`, { path })
}
