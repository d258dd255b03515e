/**
 * How snapshots move bytes in and out of a sandbox through the handle's
 * process API alone, so every provider works the same way: a private folder
 * under the sandbox's `/tmp`, files put there through a spawned process's
 * stdin as raw bytes where the provider has `writableStdin`, otherwise
 * through `exec` stdin (as base64, since that stdin is text and Cloudflare's
 * spawn has no stdin at all), and byte
 * streams read back through `spawn` stdout as base64. Also the lazy load of
 * `modern-tar`. Invariant: every command runs with `LC_ALL=C`, and its output
 * is scrubbed of secrets before an error quotes it.
 */
import { randomUUID } from 'node:crypto'
import type { SandboxHandle } from '../contracts/handle.js'
import { decodeBase64Stream } from '../journal/bytes.js'
import { shellQuote } from '../shell/quote.js'
import { SandboxSnapshotError } from './errors.js'

/** The environment of every snapshot command: byte-wise names and sorting, no locale conversion in tar. */
const SNAPSHOT_ENV: Readonly<Record<string, string>> = Object.freeze({ LC_ALL: 'C' })

/** Bytes of stderr kept for an error message. */
const STDERR_KEEP_CHARS = 4_096

/** One capture's or restore's private folder inside the sandbox, and how its commands run. */
export interface SnapshotScratch {
  readonly handle: SandboxHandle
  /** Absolute folder under `/tmp`, shell-quoted into commands as `$D`. */
  readonly dir: string
  /** Removes secrets from text an error will quote. */
  readonly scrub: (text: string) => string
  /** `capture` or `restore`, to start messages. */
  readonly operation: string
  /** Set once a command may have created the folder, so a failure knows to remove it. */
  created: boolean
}

/** A new scratch description; the folder is made by the first command that writes into it. */
export function newScratch(handle: SandboxHandle, operation: string, scrub: (text: string) => string): SnapshotScratch {
  return { handle, dir: `/tmp/tanstack-snapshot-${randomUUID()}`, scrub, operation, created: false }
}

/** `D=<dir>; ` before a script, so scripts say `"$D"`. */
function withDir(scratch: SnapshotScratch, script: string): string {
  return `D=${shellQuote(scratch.dir)}; ${script}`
}

/** The error of a failed snapshot command, quoting its (scrubbed) stderr. */
export function sandboxFailed(scratch: SnapshotScratch, what: string, exitCode: number, stderr: string, cause?: unknown): SandboxSnapshotError {
  const tail = scratch.scrub(stderr.trim()).slice(-STDERR_KEEP_CHARS)
  return new SandboxSnapshotError(
    'sandbox-failed',
    `${scratch.operation}: ${what} failed in sandbox ${scratch.handle.id} (${scratch.handle.provider}) with exit code ${exitCode}${tail ? `: ${tail}` : ''}. The sandbox needs sh, find, xargs, tar, base64, head, tail, wc and a writable /tmp.`,
    cause === undefined ? {} : { cause },
  )
}

/**
 * Run a script to completion (in the workspace root, `$D` set), optionally
 * feeding it bytes on stdin as base64 text (decode them with `base64 -d`).
 * @throws SandboxSnapshotError `sandbox-failed` on a non-zero exit.
 */
export async function runScript(scratch: SnapshotScratch, what: string, script: string, stdinBytes?: Uint8Array): Promise<void> {
  scratch.created = true
  const stdin = stdinBytes === undefined ? undefined : Buffer.from(stdinBytes.buffer, stdinBytes.byteOffset, stdinBytes.byteLength).toString('base64')
  const result = await scratch.handle.process.exec(withDir(scratch, script), { env: { ...SNAPSHOT_ENV }, ...(stdin === undefined ? {} : { stdin }) })
  if (result.exitCode !== 0) throw sandboxFailed(scratch, what, result.exitCode, result.stderr)
}

/**
 * Put `bytes` into `$D/<name>` (replacing it, or appending with `append`),
 * creating the private folder (mode 0700) on first use.
 */
export async function putScratchFile(scratch: SnapshotScratch, name: string, bytes: Uint8Array, append = false): Promise<void> {
  await runScript(scratch, `writing ${name} to its private folder`, `umask 077 && mkdir -p "$D" && base64 -d ${append ? '>>' : '>'} "$D"/${shellQuote(name)}`, bytes)
}

/** A file in the private folder being written through one process's stdin ({@link openScratchWriter}). */
export interface ScratchWriter {
  /** Append raw bytes; resolves once the process's stdin took them (backpressure). @throws SandboxSnapshotError `sandbox-failed` with the process's stderr when it stopped reading because it failed. */
  write(bytes: Uint8Array): Promise<void>
  /** End stdin and wait for the file to be complete. @throws SandboxSnapshotError `sandbox-failed` on a non-zero exit. */
  close(): Promise<void>
  /** Stop the writer after a failure elsewhere (best effort; the caller removes the folder). */
  abort(): Promise<void>
}

/**
 * Open `$D/<name>` for writing through the stdin of one `spawn`ed `cat`, so
 * raw bytes stream in with backpressure and no base64 (only on a handle
 * whose capabilities say `writableStdin`). Creates the private folder (mode
 * 0700). stdout and stderr are read alongside, stderr kept for the error.
 */
export async function openScratchWriter(scratch: SnapshotScratch, what: string, name: string): Promise<ScratchWriter> {
  scratch.created = true
  const child = await scratch.handle.process.spawn(withDir(scratch, `umask 077 && mkdir -p "$D" && cat > "$D"/${shellQuote(name)}`), { env: { ...SNAPSHOT_ENV } })
  let stderr = ''
  const drained = Promise.all([
    (async () => {
      for await (const chunk of child.stderr) if (stderr.length < STDERR_KEEP_CHARS * 4) stderr += chunk
    })(),
    (async () => {
      for await (const chunk of child.stdout) void chunk
    })(),
  ]).catch(() => undefined)
  return {
    async write(bytes) {
      try {
        await child.stdin.write(bytes)
      } catch (error) {
        // The process stopped reading (it failed: no space, no /tmp): its exit and stderr say why.
        await drained
        const exit = await child.wait().catch(() => undefined)
        if (exit !== undefined && exit.exitCode !== 0) throw sandboxFailed(scratch, what, exit.exitCode, stderr, error)
        throw error
      }
    },
    async close() {
      await child.stdin.end()
      await drained
      const exit = await child.wait()
      if (exit.exitCode !== 0) throw sandboxFailed(scratch, what, exit.exitCode, stderr)
    },
    async abort() {
      await child.kill().catch(() => undefined)
      await drained
      await child.wait().catch(() => undefined)
    },
  }
}

/** Remove the private folder if a command may have made it; best effort, for a capture or restore that already failed (its own error is the one to report). */
export async function removeScratch(scratch: SnapshotScratch): Promise<void> {
  if (!scratch.created) return
  try {
    await scratch.handle.process.exec(withDir(scratch, 'rm -rf "$D"'), { env: { ...SNAPSHOT_ENV } })
  } catch {
    // Already gone (a destroyed sandbox) or unreachable: nothing more can be done here.
    return
  }
}

/**
 * Run `body` with its stdout piped through `base64` and hand the decoded
 * bytes to `consume` as they arrive. The script exits with `body`'s own exit
 * status (carried out of the pipe on a spare file descriptor, since POSIX
 * `sh` has no `pipefail`); it creates nothing unless `body` does. stderr is
 * read alongside (so a provider never blocks on it) and kept for the error
 * message.
 *
 * `consume` reports output it cannot read as `SandboxSnapshotError`
 * `sandbox-failed`; when the command itself failed, that becomes the
 * command's error (its stderr says why the output was cut).
 *
 * @throws SandboxSnapshotError `sandbox-failed` when `body` exits non-zero or
 *   its output cannot be read; whatever else `consume` throws, unchanged (the
 *   process is killed first).
 */
export async function streamFromScript(scratch: SnapshotScratch, what: string, body: string, consume: (bytes: AsyncIterable<Uint8Array>) => Promise<void>): Promise<void> {
  const script = `{ s=$( { { ${body}
echo $? >&3; } | base64 >&4; } 3>&1 ); } 4>&1; exit "\${s:-99}"`
  const child = await scratch.handle.process.spawn(withDir(scratch, script), { env: { ...SNAPSHOT_ENV } })
  let stderr = ''
  const stderrDone = (async () => {
    for await (const chunk of child.stderr) if (stderr.length < STDERR_KEEP_CHARS * 4) stderr += chunk
  })().catch(() => undefined)
  try {
    await consume(decoded(scratch, what, child.stdout))
  } catch (error) {
    await child.kill().catch(() => undefined)
    await stderrDone
    const exit = await child.wait().catch(() => undefined)
    const unreadable = SandboxSnapshotError.isInstance(error) && error.reason === 'sandbox-failed'
    if (unreadable && exit !== undefined && exit.exitCode !== 0 && exit.signal === undefined) throw sandboxFailed(scratch, what, exit.exitCode, stderr, error)
    throw error
  }
  await stderrDone
  const exit = await child.wait()
  if (exit.exitCode !== 0) throw sandboxFailed(scratch, what, exit.exitCode, stderr)
}

/** The decoded bytes of base64 stdout; a frame that does not decode is `sandbox-failed`. */
async function* decoded(scratch: SnapshotScratch, what: string, stdout: AsyncIterable<string>): AsyncIterable<Uint8Array> {
  try {
    yield* decodeBase64Stream(stdout)
  } catch (error) {
    throw unreadableOutput(scratch, what, error)
  }
}

/** The error for output of `what` that cannot be read (cut off, or not what the command should print). */
export function unreadableOutput(scratch: SnapshotScratch, what: string, cause: unknown): SandboxSnapshotError {
  const detail = scratch.scrub(cause instanceof Error ? cause.message : String(cause))
  return new SandboxSnapshotError('sandbox-failed', `${scratch.operation}: the output of ${what} in sandbox ${scratch.handle.id} (${scratch.handle.provider}) could not be read: ${detail}`, { cause })
}
