/**
 * `handle.fs` of the Daytona provider: each call is one run of the shared
 * confined fs script (core's FS_SCRIPT, installed in the sandbox) as the
 * sandbox user, paths as arguments. File contents never travel through the
 * session logs (they are decoded as text): a write uploads the bytes to a
 * private transfer file the script reads from, a read has the script write
 * one that is downloaded, both through the files API, byte-exact.
 */
import { SandboxConfigError, shellQuote } from '@tanstack/ai-sandbox'
import type { SandboxDirEntry, SandboxFs } from '@tanstack/ai-sandbox'
import { FS_ENTRY_TYPES, fsScriptError, fsScriptPath, fsTooLargeError, parseFsStat, refuseWorkspaceRoot } from '@tanstack/ai-sandbox/internal'
import type { FsOp, FsScriptOwner, FsScriptPath } from '@tanstack/ai-sandbox/internal'
import { PROVIDER_NAME } from './errors.js'
import { newJobId } from './job.js'
import type { SandboxState } from './state.js'
import type { CommandResult } from './toolbox.js'

/** Names this provider in the shared fs-script errors. */
const OWNER: FsScriptOwner = { provider: PROVIDER_NAME, readLimitOption: 'daytonaSandbox({ maxReadBytes })' }

/** Build the `fs` member of a handle over one sandbox's state. */
export function createDaytonaFs(state: SandboxState): SandboxFs {
  const lexical = (path: string): FsScriptPath => fsScriptPath(path, state.workspaceRoot)

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

  return {
    read: async (path) => (await readBytes('read', lexical(path))).toString('utf8'),

    readBytes: async (path) => {
      const bytes = await readBytes('readBytes', lexical(path))
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    },

    write: async (path, data) => {
      const target = lexical(path)
      refuseWorkspaceRoot('write', target)
      state.assertLive('fs.write')
      if (typeof data !== 'string' && !(data instanceof Uint8Array)) {
        throw new SandboxConfigError('fs.write.data', `Invalid option fs.write.data: expected a string or a Uint8Array, got ${data === null ? 'null' : typeof data}.`)
      }
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

    list: async (path = '.') => {
      const target = lexical(path)
      const { stdout } = await op('list', 'list', [target])
      const entries: SandboxDirEntry[] = []
      for (const record of stdout.split('\0')) {
        if (record === '') continue
        const name = record.slice(1)
        entries.push({ name, path: target.relative === '' ? name : `${target.relative}/${name}`, type: FS_ENTRY_TYPES[record[0]!] ?? 'other' })
      }
      return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    },

    mkdir: async (path) => {
      await op('mkdir', 'mkdir', [lexical(path)])
    },

    remove: async (path) => {
      const target = lexical(path)
      refuseWorkspaceRoot('remove', target)
      await op('remove', 'remove', [target])
    },

    rename: async (from, to) => {
      const source = lexical(from)
      const target = lexical(to)
      refuseWorkspaceRoot('rename', source)
      refuseWorkspaceRoot('rename', target)
      await op('rename', 'rename', [source, target])
    },

    exists: async (path) => {
      const { stdout } = await op('exists', 'exists', [lexical(path)])
      return stdout === '1'
    },

    lstat: async (path) => {
      const { stdout } = await op('lstat', 'lstat', [lexical(path)])
      return parseFsStat(OWNER, stdout.trim(), path)
    },
  }
}
