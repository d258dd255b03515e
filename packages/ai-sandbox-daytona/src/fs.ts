/**
 * `handle.fs` of the Daytona provider: each call is one run of the shared
 * confined fs script (core's FS_SCRIPT, installed in the sandbox) as the
 * sandbox user, paths as arguments. File contents never travel through the
 * session logs (they are decoded as text): a write uploads the bytes to a
 * private transfer file the script reads from, a read has the script write
 * one that is downloaded, both through the files API, byte-exact. Path
 * mapping, root refusals and the output of list/exists/lstat are core's
 * `scriptFs`; this file owns the transport.
 */
import { shellQuote } from '@tanstack/ai-sandbox'
import type { SandboxFs } from '@tanstack/ai-sandbox'
import { checkWriteData, fsScriptError, fsTooLargeError, scriptFs } from '@tanstack/ai-sandbox/internal'
import type { FsOp, FsScriptOwner, FsScriptPath } from '@tanstack/ai-sandbox/internal'
import { PROVIDER_NAME } from './errors.js'
import { newJobId } from './job.js'
import type { SandboxState } from './state.js'
import type { CommandResult } from './toolbox.js'

/** Names this provider in the shared fs-script errors. */
const OWNER: FsScriptOwner = { provider: PROVIDER_NAME, readLimitOption: 'daytonaSandbox({ maxReadBytes })' }

/** Build the `fs` member of a handle over one sandbox's state. */
export function createDaytonaFs(state: SandboxState): SandboxFs {
  /** One script run: `redirect` is appended (`< in`, `> out`), `wrap` may wrap the line; the exit code is mapped. */
  async function op(method: string, fsOp: FsOp, paths: FsScriptPath[], extra: string[] = [], redirect = '', wrap = (line: string) => line): Promise<CommandResult> {
    state.assertLive(`fs.${method}`)
    const args = [fsOp, state.physicalRoot, ...paths.map((p) => p.arg), ...extra].map(shellQuote).join(' ')
    const line = wrap(`LC_ALL=C /bin/sh ${shellQuote(state.paths.fs)} ${args}${redirect}`)
    let run = await state.toolbox.run(line, `fs.${method}`, 'fs-failed')
    if (run.exitCode === 127 && run.stderr.includes(state.paths.fs)) {
      await state.reinstall(`fs.${method}`)
      run = await state.toolbox.run(line, `fs.${method}`, 'fs-failed')
    }
    if (run.exitCode === 0) return run
    throw fsScriptError(OWNER, method, paths, { code: run.exitCode, stderr: run.stderr.trim() }, state.config.maxReadBytes)
  }

  async function readBytes(method: 'read' | 'readBytes', target: FsScriptPath): Promise<Buffer> {
    const limit = state.config.maxReadBytes
    const out = `${state.paths.xfer}/${newJobId()}`
    try {
      await op(method, 'read', [target], [String(limit)], ` > ${shellQuote(out)}`)
      const bytes = await state.toolbox.download(out, `fs.${method}`)
      if (bytes.byteLength > limit) throw fsTooLargeError(OWNER, method, target.path, limit)
      return bytes
    } finally {
      state.toolbox.removeLater(out)
    }
  }

  return scriptFs({
    owner: OWNER,
    workspaceRoot: state.workspaceRoot,
    run: async (method, fsOp, paths) => (await op(method, fsOp, paths)).stdout,
    read: async (target) => (await readBytes('read', target)).toString('utf8'),
    readBytes: async (target) => {
      const bytes = await readBytes('readBytes', target)
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    },
    write: async (target, data) => {
      state.assertLive('fs.write')
      checkWriteData(data)
      const source = `${state.paths.xfer}/${newJobId()}`
      await state.toolbox.upload([{ path: source, data }], 'fs.write', 'fs-failed')
      try {
        // In a subshell: `exit` must not end the session's own shell. The transfer file goes in the same
        // command, unless the script was missing (127): then op() installs it and runs the line again.
        await op('write', 'write', [target], [], ` < ${shellQuote(source)}`, (line) => `(${line}; s=$?; [ $s = 127 ] || rm -f ${shellQuote(source)}; exit $s)`)
      } catch (error) {
        state.toolbox.removeLater(source)
        throw error
      }
    },
  })
}
