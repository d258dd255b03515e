/**
 * `captureSandboxWorkspace`: a sandbox's workspace as a manifest plus
 * content-addressed blobs, read through the handle's process API only (so
 * every provider works): one listing, the policy applied on the host, then
 * one tar stream of exactly the chosen entries, parsed with modern-tar as it
 * arrives. Invariants: nothing reaches `putBlob` before the whole listing
 * passed the checks (no symlink, executable, special file, oversized file or
 * secret-bearing path among the kept entries); every stored byte went
 * through the secret zeroing first; each distinct blob is put once.
 */
import { z } from 'zod'
import type { SandboxHandle } from '../contracts/handle.js'
import { isSecretRef, type SecretRef } from '../contracts/secret-ref.js'
import { parseOptions } from '../contracts/validate.js'
import { createSecretScrubber } from '../secrets/secret-scrubber.js'
import { shellQuote } from '../shell/quote.js'
import { ArchiveReader } from './archive-reader.js'
import { chooseEntries } from './capture-selection.js'
import { hashSandboxSnapshotManifest, SANDBOX_SNAPSHOT_MANIFEST_VERSION, type SandboxSnapshotManifest } from './manifest.js'
import { resolveSnapshotPolicy, type SandboxSnapshotPolicy } from './policy.js'
import { newScratch, putScratchFile, removeScratch, streamFromScript } from './sandbox-io.js'
import { createSecretZeroer, resolveSnapshotSecrets } from './secret-zeroing.js'
import { listSandboxTree } from './tree-listing.js'

/** Base64 characters of the chosen-path list that still go inside the tar command (one command-line argument may hold 128 KiB on Linux). */
const INLINE_LIST_CHARS = 64 * 1024

/** Default of `maxFileBytes` (64 MiB, the bundled providers' `maxReadBytes`). */
export const DEFAULT_SNAPSHOT_MAX_FILE_BYTES = 64 * 1024 * 1024

/** Options of {@link captureSandboxWorkspace}. */
export interface CaptureSandboxWorkspaceOptions {
  /**
   * Store one blob: called once per distinct SHA-256 of a capture, after the
   * whole listing passed its checks, with the bytes to keep (secrets already
   * zeroed). Awaited before the next file is read. The bytes are yours to
   * keep; capture never touches them again. A store that already holds the
   * blob may return at once.
   */
  putBlob: (sha256: string, bytes: Uint8Array) => Promise<void>
  /** Which paths to store; default `defaultSandboxSnapshotPolicy()`. */
  policy?: SandboxSnapshotPolicy
  /**
   * The run's secrets, zeroed in every stored file: `SecretRef`s (resolved
   * here, e.g. `Object.values(workspace.secrets)`) or resolved values.
   * Values shorter than 4 characters are not zeroed. Default: none.
   */
  secrets?: readonly (SecretRef | string)[]
  /** A kept regular file larger than this many bytes fails the capture (before any `putBlob`). Default 64 MiB. */
  maxFileBytes?: number
}

/** What {@link captureSandboxWorkspace} returns. */
export interface SandboxSnapshotCapture {
  readonly manifest: SandboxSnapshotManifest
  /** {@link hashSandboxSnapshotManifest} of `manifest`; a restore checks it. */
  readonly manifestSha256: string
  /** Counts: files and empty directories stored, bytes over all files, blobs handed to `putBlob`, secret occurrences zeroed. */
  readonly stats: { readonly files: number; readonly directories: number; readonly bytes: number; readonly blobs: number; readonly zeroedSecrets: number }
}

const optionsSchema = z
  .object({
    putBlob: z.custom<CaptureSandboxWorkspaceOptions['putBlob']>((value) => typeof value === 'function', { message: 'expected an async function (sha256, bytes) that stores one blob' }),
    policy: z.unknown().optional(),
    secrets: z.array(z.custom<SecretRef | string>((value) => typeof value === 'string' || isSecretRef(value), { message: 'expected a SecretRef from createSecrets() or a resolved secret value (string)' })).optional(),
    maxFileBytes: z.number().int('expected whole bytes').positive('expected a positive number of bytes').optional(),
  })
  .strict()

/**
 * Capture a sandbox's workspace (`handle.workspaceRoot`) as a portable
 * snapshot: regular files and empty directories only, chosen by the policy,
 * with secret values zeroed, each file's bytes handed to `putBlob` under
 * their SHA-256.
 *
 * Runs two commands in the sandbox: a `find` listing, then `tar` of the
 * chosen paths piped through `base64` (the path list goes in the command, or
 * for more than about 48 KiB of paths through one more `exec`'s stdin, to a
 * private folder under `/tmp`); one more removes that folder after a
 * failure. Needs `sh`, `find`, `xargs`, `tar` and `base64` (GNU or BusyBox).
 * Capture what is quiescent: a file that changes while it is read fails the
 * capture (`changed`, `executable`) or is stored as read.
 *
 * Memory: the listing and the manifest (a few hundred bytes per entry), one
 * file's bytes (at most `maxFileBytes`) and stream buffers of about 1 MiB;
 * independent of the total size of the tree.
 *
 * On failure the caller must keep its previous snapshot head: blobs `putBlob`
 * already received (only when the tree changed during the read: every check
 * on the listing runs before the first put) are unreferenced and harmless.
 *
 * @param handle - The sandbox (`process.exec` and `process.spawn` are used).
 * @param options - See {@link CaptureSandboxWorkspaceOptions}.
 * @returns The manifest, its hash and counts.
 * @throws SandboxSnapshotError `symlink`, `executable`, `special-file`,
 *   `file-too-large`, `invalid-path` or `secret-in-path` naming the first
 *   offending kept path (nothing was put); `changed`; `sandbox-failed`.
 *   SandboxConfigError for bad options. Whatever `putBlob`, a policy
 *   predicate or `redact` throws, unchanged.
 * @example
 * ```ts
 * const blobs = new Map<string, Uint8Array>()
 * const { manifest, manifestSha256 } = await captureSandboxWorkspace(handle, {
 *   putBlob: async (sha256, bytes) => void blobs.set(sha256, bytes),
 *   secrets: Object.values(secrets),
 * })
 * ```
 */
export async function captureSandboxWorkspace(handle: SandboxHandle, options: CaptureSandboxWorkspaceOptions): Promise<SandboxSnapshotCapture> {
  const parsed = parseOptions(optionsSchema, options, 'captureSandboxWorkspace')
  const policy = resolveSnapshotPolicy(options.policy, 'captureSandboxWorkspace.policy')
  const maxFileBytes = parsed.maxFileBytes ?? DEFAULT_SNAPSHOT_MAX_FILE_BYTES
  const zeroer = createSecretZeroer(resolveSnapshotSecrets(parsed.secrets ?? []))
  const scrubber = createSecretScrubber(zeroer.values.map((value) => ['SNAPSHOT', value] as const))
  const scratch = newScratch(handle, 'captureSandboxWorkspace', scrubber.text)
  try {
    const listed = await listSandboxTree(scratch, { pruneNames: policy.pruneNames, maxFileBytes })
    const chosen = chooseEntries(scratch, listed, policy, zeroer)
    const reader = new ArchiveReader(scratch, chosen, { putBlob: parsed.putBlob, policy, zeroer, maxFileBytes })
    if (chosen.length > 0) {
      // The chosen paths, NUL-separated, for xargs: inside the command when small (nothing written in the
      // sandbox, one round trip less), else put in the private folder first and removed by the same command.
      const list = Buffer.from(chosen.map((entry) => `./${entry.path}\0`).join(''), 'utf8')
      const encoded = list.toString('base64')
      const tarChosen = 'xargs -0 tar -cf - --no-recursion'
      let body = `printf '%s' ${shellQuote(encoded)} | base64 -d | ${tarChosen}`
      if (encoded.length > INLINE_LIST_CHARS) {
        await putScratchFile(scratch, 'chosen', list)
        body = `${tarChosen} < "$D/chosen"; s=$?; rm -rf "$D"; (exit $s)`
      }
      await streamFromScript(scratch, 'the workspace archive (tar)', body, (bytes) => reader.read(bytes))
      scratch.created = false
    }
    const manifest: SandboxSnapshotManifest = { version: SANDBOX_SNAPSHOT_MANIFEST_VERSION, entries: reader.finish() }
    return { manifest, manifestSha256: hashSandboxSnapshotManifest(manifest), stats: reader.stats() }
  } finally {
    await removeScratch(scratch)
  }
}
