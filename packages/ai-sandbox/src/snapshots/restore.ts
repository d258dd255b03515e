/**
 * `restoreSandboxWorkspace`: write a portable snapshot into a sandbox's
 * workspace through the handle's process API only. Order: verify the
 * manifest, list the workspace, stage a tar archive (built with modern-tar,
 * each blob fetched once and verified as it is packed) in a private folder
 * under `/tmp` (raw bytes through one process's stdin where the provider
 * has `writableStdin`, else base64 parts through `exec` stdin), then one
 * `exec` removes, extracts and sets modes. Invariant: nothing is written
 * into the workspace before the manifest and every blob verified and the
 * whole archive staged; a failure before that removes the private folder.
 */
import { createHash } from 'node:crypto'
import { createTarPacker, type TarHeader } from 'modern-tar'
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import { parseOptions } from '../contracts/validate.js'
import { DEFAULT_SNAPSHOT_MAX_FILE_BYTES } from './capture.js'
import { SandboxSnapshotError } from './errors.js'
import { shellQuote } from '../shell/quote.js'
import { verifySnapshotManifest, type SandboxSnapshotEntry, type SandboxSnapshotFileEntry, type SandboxSnapshotManifest } from './manifest.js'
import { resolveSnapshotPolicy, type SandboxSnapshotPolicy } from './policy.js'
import { planRestore, type RestorePlan } from './restore-plan.js'
import { newScratch, openScratchWriter, putScratchFile, removeScratch, runScript, type SnapshotScratch } from './sandbox-io.js'
import { listSandboxTree } from './tree-listing.js'

/** Archive bytes moved into the sandbox per `exec` (about 11 MB of base64 text). */
const PART_BYTES = 8 * 1024 * 1024

/** Options of {@link restoreSandboxWorkspace}. */
export interface RestoreSandboxWorkspaceOptions {
  /** The manifest `captureSandboxWorkspace` returned (as stored: any value is checked). */
  manifest: SandboxSnapshotManifest
  /** The `manifestSha256` stored with it. */
  manifestSha256: string
  /** Fetch one blob by its SHA-256; `undefined` or `null` when the store does not have it. Called once per file entry the policy keeps, in manifest order. */
  getBlob: (sha256: string) => Promise<Uint8Array | undefined | null>
  /** The policy the snapshot was captured with; entries it drops are not written, and it bounds what is removed. Default `defaultSandboxSnapshotPolicy()`. */
  policy?: SandboxSnapshotPolicy
  /** A manifest file larger than this many bytes is refused. Default 64 MiB, as for capture. */
  maxFileBytes?: number
  /** Ignored: accepted so a capture's result can be spread in (`{ ...capture, getBlob }`). */
  stats?: unknown
}

/** What {@link restoreSandboxWorkspace} did. */
export interface SandboxSnapshotRestore {
  /** Files and empty directories written, bytes over all files, entries removed first. */
  readonly stats: { readonly files: number; readonly directories: number; readonly bytes: number; readonly removed: number }
  /** Manifest paths the policy dropped, so not written. */
  readonly skipped: readonly string[]
}

const optionsSchema = z
  .object({
    manifest: z.unknown(),
    manifestSha256: z.string().regex(/^[0-9a-f]{64}$/, 'expected the 64 lowercase hex digits capture returned as manifestSha256'),
    getBlob: z.custom<RestoreSandboxWorkspaceOptions['getBlob']>((value) => typeof value === 'function', { message: 'expected an async function (sha256) that returns the blob bytes' }),
    policy: z.unknown().optional(),
    maxFileBytes: z.number().int('expected whole bytes').positive('expected a positive number of bytes').optional(),
    stats: z.unknown().optional(),
  })
  .strict()

/**
 * Restore a portable snapshot into a sandbox's workspace, byte for byte, with
 * the captured file modes and empty directories.
 *
 * Meant for a NEW private sandbox, before anything runs in it (and before
 * projection, which then writes current secret values over the zeroed
 * ones). Never restore over a live sandbox that a run resumed: the restore
 * replaces its files. What is already there (a new sandbox's bootstrap
 * output): inside the policy's scope the workspace is made to match the
 * manifest exactly, so files the manifest does not have are removed, and
 * folders the manifest does not need are removed with everything in them;
 * entries the policy excludes (`.git`, `node_modules`, `.env*` by default)
 * or leaves out through `include` are kept, unless they stand where the
 * manifest needs a file or a folder. Folders that hold stored files are
 * created with mode 0755 when missing and keep their mode when present.
 *
 * A manifest or blob that does not verify throws before anything is written
 * into the workspace (blobs are checked while the archive is staged in the
 * sandbox's `/tmp`; the staging folder is removed). A failure after that
 * (the sandbox itself failing) may leave the workspace half restored:
 * discard that sandbox.
 *
 * Runs, besides reading blobs: one `find` listing; then, where the provider
 * has `writableStdin`, one `spawn` whose stdin takes the archive's raw bytes
 * into a private folder under `/tmp`, or else one `exec` per 8 MiB of
 * archive past the first 8 MiB (as base64 on stdin); and one `exec` that
 * removes, extracts (`tar`) and sets modes. Needs `sh`, `cat`, `find`,
 * `xargs`, `tar`, `base64`, `head`, `tail` and `wc` (GNU or BusyBox).
 * Memory: the manifest, one blob, and the provider's stdin buffer (or one
 * 8 MiB part).
 *
 * @param handle - A new sandbox (`process.exec` and `process.spawn` are used).
 * @param options - See {@link RestoreSandboxWorkspaceOptions}.
 * @returns Counts and the manifest paths the policy skipped.
 * @throws SandboxSnapshotError `invalid-manifest`, `manifest-hash-mismatch`,
 *   `unsafe-path`, `blob-missing` or `blob-mismatch` naming the entry (the
 *   workspace is unchanged); `sandbox-failed`. SandboxConfigError for bad
 *   options. Whatever `getBlob` throws, unchanged (the workspace is unchanged).
 * @example
 * ```ts
 * const fresh = await provider.create()
 * await restoreSandboxWorkspace(fresh, { manifest, manifestSha256, getBlob: async (sha256) => blobs.get(sha256) })
 * ```
 */
export async function restoreSandboxWorkspace(handle: SandboxHandle, options: RestoreSandboxWorkspaceOptions): Promise<SandboxSnapshotRestore> {
  const parsed = parseOptions(optionsSchema, options, 'restoreSandboxWorkspace')
  const policy = resolveSnapshotPolicy(options.policy, 'restoreSandboxWorkspace.policy')
  const maxFileBytes = parsed.maxFileBytes ?? DEFAULT_SNAPSHOT_MAX_FILE_BYTES
  const manifest = verifySnapshotManifest(parsed.manifest, parsed.manifestSha256, maxFileBytes)
  const scratch = newScratch(handle, 'restoreSandboxWorkspace', (text) => text)
  try {
    const plan = planRestore(manifest.entries, await listSandboxTree(scratch, { pruneNames: policy.pruneNames }), policy)
    const archive = plan.entries.length + plan.createDirectories.length > 0 ? await stageArchive(scratch, plan, parsed.getBlob) : { total: 0, last: Buffer.alloc(0) }
    const directories = plan.entries.filter((entry) => entry.type === 'directory')
    // The removals, the modes script and the archive's last part travel on the stdin of the one exec that writes.
    const remove = plan.remove.length > 0 ? nulList(plan.remove) : Buffer.alloc(0)
    const modes = directories.length > 0 ? Buffer.from(modesScript(directories), 'utf8') : Buffer.alloc(0)
    await runScript(scratch, 'writing the workspace (rm, tar -x, chmod)', applyScript(remove.length, modes.length, archive), Buffer.concat([remove, modes, archive.last]))
    // The script removed its folder on the way out.
    scratch.created = false
    const files = plan.entries.filter((entry): entry is SandboxSnapshotFileEntry => entry.type === 'file')
    return {
      stats: { files: files.length, directories: directories.length, bytes: files.reduce((sum, entry) => sum + entry.size, 0), removed: plan.remove.length },
      skipped: plan.skipped,
    }
  } finally {
    await removeScratch(scratch)
  }
}

/** NUL-terminated paths as `./path` (so none starts with `-`). */
function nulList(paths: readonly string[]): Buffer {
  return Buffer.from(paths.map((path) => `./${path}\0`).join(''), 'utf8')
}

/** Paths per `chmod` line of {@link modesScript}. */
const CHMOD_BATCH = 200

/**
 * `chmod` lines setting each empty directory's mode, grouped by mode, paths
 * shell-quoted (a script rather than `xargs -n 2`, which BusyBox's xargs
 * mishandles with `-0`). Needed where a directory existed before: BusyBox
 * tar leaves an existing directory's mode as it was.
 */
function modesScript(directories: readonly SandboxSnapshotEntry[]): string {
  const byMode = new Map<number, string[]>()
  for (const entry of directories) {
    const paths = byMode.get(entry.mode) ?? []
    paths.push(shellQuote(`./${entry.path}`))
    byMode.set(entry.mode, paths)
  }
  const lines: string[] = []
  for (const [mode, paths] of byMode) for (let at = 0; at < paths.length; at += CHMOD_BATCH) lines.push(`chmod ${mode.toString(8)} ${paths.slice(at, at + CHMOD_BATCH).join(' ')} || exit 1`)
  return `${lines.join('\n')}\n`
}

/**
 * The one script that changes the workspace. Its stdin holds the removal
 * list (`remove` bytes), the modes script (`modes` bytes) and the archive's
 * last part; it splits them, checks the staged archive's size, removes,
 * extracts with the archive's exact modes (umask 000), sets the empty
 * directories' modes and removes its private folder.
 */
function applyScript(remove: number, modes: number, archive: StagedArchive): string {
  return [
    'umask 077 && mkdir -p "$D" && base64 -d > "$D/in" || exit 2',
    remove > 0 ? `head -c ${remove} "$D/in" > "$D/remove" || exit 2` : '',
    modes > 0 ? `tail -c +${remove + 1} "$D/in" | head -c ${modes} > "$D/modes.sh" || exit 2` : '',
    archive.total > 0 ? `tail -c +${remove + modes + 1} "$D/in" >> "$D/archive" || exit 2` : '',
    archive.total > 0 ? `n=$(wc -c < "$D/archive" | tr -d ' '); [ "$n" = ${archive.total} ] || { echo "the staged archive has $n bytes, not ${archive.total}" >&2; exit 3; }` : '',
    remove > 0 ? 'xargs -0 rm -rf < "$D/remove" || exit 4' : '',
    archive.total > 0 ? '(umask 000 && tar -xof "$D/archive") || exit 5' : '',
    modes > 0 ? 'sh "$D/modes.sh" || exit 6' : '',
    'rm -rf "$D"',
  ]
    .filter((line) => line !== '')
    .join('\n')
}

/** The archive as staged: its size, and what of it is held back for the exec that writes (nothing when streamed through stdin). */
interface StagedArchive {
  readonly total: number
  readonly last: Buffer
}

/** Where the archive's bytes go on their way to `$D/archive`. */
interface ArchiveSink {
  /** Take the next bytes (may hold them). */
  write(bytes: Uint8Array): Promise<void>
  /** All bytes written: finish staging and return what is held back. */
  finish(): Promise<Buffer>
  /** A failure elsewhere: stop (best effort). */
  abort(): Promise<void>
}

/** Raw bytes through one spawned process's stdin (providers with `writableStdin`). */
async function stdinSink(scratch: SnapshotScratch): Promise<ArchiveSink> {
  const writer = await openScratchWriter(scratch, 'staging the archive', 'archive')
  return {
    write: (bytes) => writer.write(bytes),
    finish: async () => {
      await writer.close()
      return Buffer.alloc(0)
    },
    abort: () => writer.abort(),
  }
}

/** Base64 parts of {@link PART_BYTES} through `exec` stdin, all but the last (providers without `writableStdin`). */
function partsSink(scratch: SnapshotScratch): ArchiveSink {
  let part: Uint8Array[] = []
  let held = 0
  const take = () => {
    const bytes = Buffer.concat(part, held)
    part = []
    held = 0
    return bytes
  }
  return {
    async write(bytes) {
      part.push(bytes)
      held += bytes.length
      if (held >= PART_BYTES) await putScratchFile(scratch, 'archive', take(), true)
    },
    finish: async () => take(),
    abort: async () => undefined,
  }
}

/**
 * Build the archive (missing parent folders, then the entries), fetching and
 * checking each file's blob as it is packed, and stage it as `$D/archive`.
 * A blob that does not verify stops the staging: the workspace has not been
 * touched yet.
 */
async function stageArchive(scratch: SnapshotScratch, plan: RestorePlan, getBlob: RestoreSandboxWorkspaceOptions['getBlob']): Promise<StagedArchive> {
  const capabilities = scratch.handle.capabilities
  const sink = capabilities.writableStdin && capabilities.backgroundProcesses ? await stdinSink(scratch) : partsSink(scratch)
  const { readable, controller } = createTarPacker()
  const mtime = new Date()
  let producerError: unknown
  const producing = (async () => {
    const add = async (header: TarHeader, bytes?: Uint8Array) => {
      const writer = controller.add({ ...header, size: bytes?.length ?? 0 }).getWriter()
      if (bytes && bytes.length > 0) await writer.write(bytes)
      await writer.close()
    }
    for (const path of plan.createDirectories) await add({ name: `${path}/`, type: 'directory', mode: 0o755, mtime, size: 0 })
    for (const entry of plan.entries) {
      if (entry.type === 'directory') await add({ name: `${entry.path}/`, type: 'directory', mode: entry.mode, mtime, size: 0 })
      else await add({ name: entry.path, type: 'file', mode: entry.mode, mtime, size: entry.size }, await verifiedBlob(getBlob, entry))
    }
    controller.finalize()
  })().catch((error: unknown) => {
    producerError = error
    controller.error(error)
  })
  let total = 0
  const reader = readable.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      total += value.length
      await sink.write(value)
    }
    await producing
    if (producerError !== undefined) throw producerError
  } catch (error) {
    await reader.cancel(error).catch(() => undefined)
    await sink.abort()
    throw producerError ?? error
  }
  return { total, last: await sink.finish() }
}

/** The bytes of `entry`'s blob, fetched through `getBlob` and checked against the entry (present, size, SHA-256). */
async function verifiedBlob(getBlob: RestoreSandboxWorkspaceOptions['getBlob'], entry: SandboxSnapshotFileEntry): Promise<Buffer> {
  const found = await getBlob(entry.sha256)
  if (found === undefined || found === null) {
    throw new SandboxSnapshotError('blob-missing', `restoreSandboxWorkspace: the blob ${entry.sha256} of ${JSON.stringify(entry.path)} is not in the store; the workspace was not changed. Blob retention is manual: keep every blob a stored manifest names.`, { path: entry.path })
  }
  if (!(found instanceof Uint8Array)) throw new SandboxSnapshotError('blob-mismatch', `restoreSandboxWorkspace: getBlob returned ${typeof found} for ${entry.sha256} (${JSON.stringify(entry.path)}), not bytes; the workspace was not changed.`, { path: entry.path })
  const bytes = Buffer.from(found.buffer, found.byteOffset, found.byteLength)
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  if (bytes.length !== entry.size || sha256 !== entry.sha256) {
    throw new SandboxSnapshotError(
      'blob-mismatch',
      `restoreSandboxWorkspace: the blob for ${JSON.stringify(entry.path)} does not match its manifest entry (${bytes.length} bytes with SHA-256 ${sha256}, expected ${entry.size} bytes with ${entry.sha256}): the store returned changed or wrong bytes; the workspace was not changed.`,
      { path: entry.path },
    )
  }
  return bytes
  }
