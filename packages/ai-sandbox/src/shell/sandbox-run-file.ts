/**
 * Files a harness run keeps in the sandbox outside the workspace, by
 * convention under `/tmp/tanstack-<harness>/`: the prompt for providers that
 * cannot write a process's stdin, a system-prompt file the CLI reads. Written
 * through `process.exec` alone (no `fs` capability needed), as base64 pieces
 * so no shell ever interprets the content. Invariant: a written file is
 * readable by the sandbox user only (mode 0600, created under umask 077).
 */
import { createHash } from 'node:crypto'
import { posix } from 'node:path'
import { SandboxOperationError } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import { shellQuote } from './quote.js'

/**
 * Base64 characters per exec (a multiple of 4, so every piece decodes on its
 * own): one exec argument is capped at 128 KiB on Linux.
 */
const PIECE_CHARS = 64 * 1024

/** The longest run id kept whole in a run file's name; longer ones are cut (a file name has at most 255 bytes). */
const MAX_NAME_ID_CHARS = 96

/**
 * The path of one run's file: `<dir>/<name>.<suffix>`. The name is the run
 * id itself when it has only `A-Z a-z 0-9 . _ -` and at most 96 characters;
 * otherwise its first 64 characters with every other character replaced by
 * `_`, then `-` and 16 hex digits of the id's SHA-256, so every valid run id
 * (up to 512 characters, spec 000's rule) fits a file name and two ids never
 * share one (`run/1` and `run_1` differ). Pure.
 *
 * @param dir - An absolute folder inside the sandbox, e.g. `/tmp/tanstack-codex`.
 * @param runId - The run's id.
 * @param suffix - What the file holds, e.g. `prompt` or `system.md`.
 * @returns The absolute path inside the sandbox.
 * @example
 * ```ts
 * sandboxRunFilePath('/tmp/tanstack-opencode', 'run-7', 'prompt') // '/tmp/tanstack-opencode/run-7.prompt'
 * sandboxRunFilePath('/tmp/tanstack-opencode', 'run/7', 'prompt') // '/tmp/tanstack-opencode/run_7-<16 hex>.prompt'
 * ```
 */
export function sandboxRunFilePath(dir: string, runId: string, suffix: string): string {
  if (/^[A-Za-z0-9._-]+$/.test(runId) && runId.length <= MAX_NAME_ID_CHARS) return `${dir}/${runId}.${suffix}`
  const readable = runId.slice(0, 64).replace(/[^A-Za-z0-9._-]/g, '_')
  return `${dir}/${readable}-${createHash('sha256').update(runId).digest('hex').slice(0, 16)}.${suffix}`
}

/** Options of {@link writeSandboxRunFile}. */
export interface WriteSandboxRunFileOptions {
  /** Absolute path inside the sandbox, usually from {@link sandboxRunFilePath}. Its folder is created when missing; an existing file is replaced. */
  file: string
  /** The text to write, stored as UTF-8 byte for byte. Any size: it goes in as many execs as it needs. */
  content: string
  /** The adapter's name, which starts the error message, e.g. `codex`. */
  harness: string
  /** What the file is, named in the error message before its path, e.g. `the prompt file`. Default: the path alone. */
  what?: string
}

/**
 * Write a run file in the sandbox, readable only by the sandbox user. The
 * sandbox needs `sh`, `mkdir`, `printf` and `base64`.
 *
 * @param handle - The run's sandbox (capability `exec`).
 * @param options - See {@link WriteSandboxRunFileOptions}.
 * @returns `options.file`, once the whole content is on disk.
 * @throws SandboxOperationError `exec-failed` when a write exits non-zero (the message names the file, the exit code and stderr).
 * @example
 * ```ts
 * const promptFile = await writeSandboxRunFile(handle, { file: sandboxRunFilePath('/tmp/tanstack-codex', runId, 'prompt'), content: prompt, harness: 'codex', what: 'the prompt file' })
 * ```
 */
export async function writeSandboxRunFile(handle: SandboxHandle, options: WriteSandboxRunFileOptions): Promise<string> {
  const { file, content, harness, what } = options
  const encoded = Buffer.from(content, 'utf8').toString('base64')
  for (let offset = 0, first = true; first || offset < encoded.length; offset += PIECE_CHARS, first = false) {
    const piece = encoded.slice(offset, offset + PIECE_CHARS)
    const prefix = first ? `umask 077 && mkdir -p ${shellQuote(posix.dirname(file))} && ` : ''
    const result = await handle.process.exec(`${prefix}printf '%s' ${shellQuote(piece)} | base64 -d ${first ? '>' : '>>'} ${shellQuote(file)}`)
    if (result.exitCode !== 0) {
      throw new SandboxOperationError('exec-failed', handle.provider, `${harness}: could not write ${what ? `${what} ` : ''}${file} in the sandbox (exit ${result.exitCode}): ${result.stderr.trim()}. The sandbox needs mkdir, printf and base64.`)
    }
  }
  return file
}

/**
 * Remove run files with `rm -f`. A file already gone is fine, and so is a
 * sandbox already destroyed: this never throws, so it is safe in a `finally`.
 *
 * @param handle - The run's sandbox (capability `exec`).
 * @param files - Absolute paths inside the sandbox; an empty list runs nothing.
 * @example
 * ```ts
 * try { ... } finally { await removeSandboxRunFiles(handle, runFiles) }
 * ```
 */
export async function removeSandboxRunFiles(handle: SandboxHandle, files: readonly string[]): Promise<void> {
  if (files.length === 0) return
  try {
    await handle.process.exec(`rm -f ${files.map(shellQuote).join(' ')}`)
  } catch {
    // The sandbox is already gone, and its files with it.
  }
}
