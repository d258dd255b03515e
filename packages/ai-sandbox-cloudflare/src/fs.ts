/**
 * `handle.fs` of the Cloudflare provider: each call is one run of core's
 * confined fs script through the wrapper, paths as arguments. Contents never
 * travel through command output: a write stores the bytes in a private
 * transfer file with `writeFile` (base64) that the script reads, a read has
 * the script write one that `readFile` (base64) fetches, both byte-exact.
 * Above {@link TRANSFER_CHUNK_BYTES} the bytes move in pieces, since Workers
 * RPC caps one value at 32 MiB. Path mapping, root refusals and the output
 * of list/exists/lstat are core's `scriptFs`; this file owns the transport.
 */
import { shellQuote } from '@tanstack/ai-sandbox'
import type { SandboxFs } from '@tanstack/ai-sandbox'
import { checkWriteData, fsScriptError, fsTooLargeError, scriptFs } from '@tanstack/ai-sandbox/internal'
import type { FsOp, FsScriptOwner, FsScriptPath } from '@tanstack/ai-sandbox/internal'
import { TRANSFER_CHUNK_BYTES } from './config.js'
import { operationError, PROVIDER_NAME } from './errors.js'
import { fromBase64, newJobId, runWrapped, toBase64 } from './job.js'
import type { SandboxState } from './state.js'

/** Names this provider in the shared fs-script errors. */
const OWNER: FsScriptOwner = { provider: PROVIDER_NAME, readLimitOption: 'cloudflareSandbox({ maxReadBytes })' }

const decoder = new TextDecoder()
const encoder = new TextEncoder()

/** Build the `fs` member of a handle over one sandbox's state. */
export function createCloudflareFs(state: SandboxState): SandboxFs {
  /** One script run in `mode` (`fs`, `fsin <source>`, `fsout <target>`); a non-zero exit becomes the typed error. */
  async function op(method: string, fsOp: FsOp, paths: FsScriptPath[], extra: string[] = [], mode: 'fs' | 'fsin' | 'fsout' = 'fs', file?: string): Promise<string> {
    state.assertLive(`fs.${method}`)
    const args = [...(file ? [file] : []), fsOp, state.physicalRoot, ...paths.map((p) => p.arg), ...extra]
    const run = await runWrapped(state, newJobId(), mode, args, `fs.${method}`, 'fs-failed')
    if (run.exitCode === 0) return decoder.decode(run.stdout)
    throw fsScriptError(OWNER, method, paths, { code: run.exitCode, stderr: decoder.decode(run.stderr).trim() }, state.config.maxReadBytes)
  }

  async function readBytes(method: 'read' | 'readBytes', target: FsScriptPath): Promise<Uint8Array> {
    const limit = state.config.maxReadBytes
    const out = `${state.paths.xfer}/${newJobId()}`
    try {
      const size = Number((await op(method, 'read', [target], [String(limit)], 'fsout', out)).trim())
      if (!Number.isFinite(size)) throw operationError('fs-failed', `fs.${method}: the provider's wrapper did not report the size of ${JSON.stringify(target.path)}.`)
      if (size > limit) throw fsTooLargeError(OWNER, method, target.path, limit)
      if (size <= TRANSFER_CHUNK_BYTES) return fromBase64(await state.toolbox.read(out, `fs.${method}`))
      const bytes = new Uint8Array(size)
      for (let offset = 0; offset < size; offset += TRANSFER_CHUNK_BYTES) {
        const piece = `${out}.${offset}`
        await state.toolbox.run(`tail -c +${offset + 1} ${shellQuote(out)} | head -c ${TRANSFER_CHUNK_BYTES} > ${shellQuote(piece)}`, `fs.${method}`, 'fs-failed')
        bytes.set(fromBase64(await state.toolbox.read(piece, `fs.${method}`)), offset)
        await state.toolbox.run(`rm -f ${shellQuote(piece)}`, `fs.${method}`, 'fs-failed')
      }
      return bytes
    } finally {
      // Not after destroy(): any SDK call would start a new, empty container.
      if (!state.destroyed) await state.toolbox.run(`rm -f ${shellQuote(out)}`, `fs.${method}`, 'fs-failed').catch(() => undefined)
    }
  }

  /** Put `data` into a transfer file (in pieces when large) and return its path. */
  async function upload(data: Uint8Array): Promise<string> {
    const source = `${state.paths.xfer}/${newJobId()}`
    if (data.byteLength <= TRANSFER_CHUNK_BYTES) {
      await state.toolbox.write(source, toBase64(data), 'fs.write')
      return source
    }
    const pieces: string[] = []
    for (let offset = 0; offset < data.byteLength; offset += TRANSFER_CHUNK_BYTES) {
      const piece = `${source}.${pieces.length}`
      await state.toolbox.write(piece, toBase64(data.subarray(offset, offset + TRANSFER_CHUNK_BYTES)), 'fs.write')
      pieces.push(piece)
    }
    const quoted = pieces.map(shellQuote).join(' ')
    await state.toolbox.run(`cat ${quoted} > ${shellQuote(source)} && rm -f ${quoted}`, 'fs.write', 'fs-failed')
    return source
  }

  return scriptFs({
    owner: OWNER,
    workspaceRoot: state.workspaceRoot,
    run: (method, fsOp, paths) => op(method, fsOp, paths),
    read: async (target) => decoder.decode(await readBytes('read', target)),
    readBytes: (target) => readBytes('readBytes', target),
    write: async (target, data) => {
      state.assertLive('fs.write')
      checkWriteData(data)
      const source = await upload(typeof data === 'string' ? encoder.encode(data) : data)
      // The wrapper removes the transfer file once the script read it.
      await op('write', 'write', [target], [], 'fsin', source)
    },
  })
}
