/**
 * Files one run keeps in the sandbox's `/tmp`: the prompt (for providers that
 * cannot write stdin) and the chat's system prompts (an OpenCode instruction
 * file). Written owner-only through exec without any shell interpreting the
 * content (base64 pieces), and removed by the adapter when the run ends.
 */
import { SandboxOperationError, shellQuote, type SandboxHandle } from '@tanstack/ai-sandbox'

/** The folder run files go in. */
export const RUN_FILES_DIR = '/tmp/tanstack-opencode'

/** Base64 characters per exec (a multiple of 4): one exec argument is capped (128 KiB on Linux). */
const PIECE_CHARS = 64 * 1024

/** The path of a run file, e.g. `/tmp/tanstack-opencode/<runId>.prompt`. */
export function runFilePath(runId: string, suffix: string): string {
  return `${RUN_FILES_DIR}/${runId.replace(/[^A-Za-z0-9._-]/g, '_')}.${suffix}`
}

/**
 * Write `content` to `file` in the sandbox, readable only by the sandbox user.
 * @throws SandboxOperationError `exec-failed` when the sandbox lacks mkdir, printf or base64.
 */
export async function writeRunFile(handle: SandboxHandle, file: string, content: string): Promise<void> {
  const encoded = Buffer.from(content, 'utf8').toString('base64')
  // Every piece is a whole number of base64 quanta, so each decodes on its own.
  for (let offset = 0, first = true; first || offset < encoded.length; offset += PIECE_CHARS, first = false) {
    const piece = encoded.slice(offset, offset + PIECE_CHARS)
    const prefix = first ? `umask 077 && mkdir -p ${shellQuote(RUN_FILES_DIR)} && ` : ''
    const result = await handle.process.exec(`${prefix}printf '%s' ${shellQuote(piece)} | base64 -d ${first ? '>' : '>>'} ${shellQuote(file)}`)
    if (result.exitCode !== 0) throw new SandboxOperationError('exec-failed', handle.provider, `opencode: could not write ${file} in the sandbox (exit ${result.exitCode}): ${result.stderr.trim()}. The sandbox needs mkdir, printf and base64.`)
  }
}

/** Remove run files; a file already gone is fine, and so is a sandbox already destroyed. */
export async function removeRunFiles(handle: SandboxHandle, files: readonly string[]): Promise<void> {
  if (files.length === 0) return
  await handle.process.exec(`rm -f ${files.map(shellQuote).join(' ')}`).catch(() => undefined)
}
