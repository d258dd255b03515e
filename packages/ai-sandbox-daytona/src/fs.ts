/**
 * `handle.fs` of the Daytona provider: each call is one run of the shared
 * confined fs script (core's FS_SCRIPT, installed in the sandbox) as the
 * sandbox user, paths as arguments. File contents never travel through the
 * session logs (they are decoded as text): a write uploads the bytes to a
 * private transfer file the script reads from, a read has the script write
 * one that is downloaded, both through the files API, byte-exact.
 */
import { SandboxConfigError, SandboxError, SandboxLimitError, SandboxPathError, shellQuote, toWorkspaceRelative } from '@tanstack/ai-sandbox'
import type { SandboxDirEntry, SandboxFileStat, SandboxFs } from '@tanstack/ai-sandbox'
import { FS_EXIT } from '@tanstack/ai-sandbox/internal'
import type { FsOp } from '@tanstack/ai-sandbox/internal'
import { operationError, PROVIDER_NAME } from './errors.js'
import { newJobId } from './job.js'
import type { SandboxState } from './state.js'
import type { CommandResult } from './toolbox.js'

/** A caller path mapped lexically onto the workspace. */
interface Lexical {
  /** As given. */
  readonly path: string
  /** Workspace-relative, `''` for the root. */
  readonly relative: string
  /** What the script gets: `relative`, or `.` for the root. */
  readonly arg: string
}

/** Build the `fs` member of a handle over one sandbox's state. */
export function createDaytonaFs(state: SandboxState): SandboxFs {
  const lexical = (path: string): Lexical => {
    const relative = toWorkspaceRelative(path, state.workspaceRoot)
    return { path, relative, arg: relative === '' ? '.' : relative }
  }

  /** One script run: `redirect` is appended (`< in`, `> out`), `wrap` may wrap the line; the exit code is mapped. */
  async function op(method: string, fsOp: FsOp, paths: Lexical[], extra: string[] = [], redirect = '', wrap = (line: string) => line): Promise<CommandResult> {
    state.assertLive(`fs.${method}`)
    const args = [fsOp, state.physicalRoot, ...paths.map((p) => p.arg), ...extra].map(shellQuote).join(' ')
    const line = wrap(`LC_ALL=C /bin/sh ${shellQuote(state.paths.fs)} ${args}${redirect}`)
    let run = await state.toolbox.run(line, `fs.${method}`, 'fs-failed')
    if (run.exitCode === 127 && run.stderr.includes(state.paths.fs)) {
      await state.reinstall(`fs.${method}`)
      run = await state.toolbox.run(line, `fs.${method}`, 'fs-failed')
    }
    if (run.exitCode === 0) return run
    throw fsError(method, paths, run, state.config.maxReadBytes)
  }

  async function readBytes(method: 'read' | 'readBytes', target: Lexical): Promise<Buffer> {
    const limit = state.config.maxReadBytes
    const out = `${state.paths.xfer}/${newJobId()}`
    try {
      await op(method, 'read', [target], [String(limit)], ` > ${shellQuote(out)}`)
      const bytes = await state.toolbox.download(out, `fs.${method}`)
      if (bytes.byteLength > limit) throw tooLargeError(method, target.path, limit)
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
      refuseRoot('write', target)
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
        entries.push({ name, path: target.relative === '' ? name : `${target.relative}/${name}`, type: ENTRY_TYPES[record[0]!] ?? 'other' })
      }
      return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    },

    mkdir: async (path) => {
      await op('mkdir', 'mkdir', [lexical(path)])
    },

    remove: async (path) => {
      const target = lexical(path)
      refuseRoot('remove', target)
      await op('remove', 'remove', [target])
    },

    rename: async (from, to) => {
      const source = lexical(from)
      const target = lexical(to)
      refuseRoot('rename', source)
      refuseRoot('rename', target)
      await op('rename', 'rename', [source, target])
    },

    exists: async (path) => {
      const { stdout } = await op('exists', 'exists', [lexical(path)])
      return stdout === '1'
    },

    lstat: async (path) => {
      const { stdout } = await op('lstat', 'lstat', [lexical(path)])
      return parseStat(stdout.trim(), path)
    },
  }
}

const ENTRY_TYPES: Readonly<Record<string, SandboxDirEntry['type']>> = { f: 'file', d: 'directory', l: 'symlink', o: 'other' }

/** Map a non-zero exit of the fs script onto a typed error. */
function fsError(method: string, paths: Lexical[], run: CommandResult, maxReadBytes: number): SandboxError {
  const [first, second] = paths
  const path = first?.path ?? '.'
  const stderr = run.stderr.trim()
  if (run.exitCode === FS_EXIT.escape) {
    const [label, ...rest] = stderr.split('\n')
    const culprit = label === 'to' && second ? second.path : path
    return new SandboxPathError('symlink-escape', culprit, `fs.${method}: ${JSON.stringify(culprit)} goes through a symlink that leads outside the sandbox workspace (to ${JSON.stringify(rest.join('\n'))}). Only symlinks that stay inside the workspace can be followed.`)
  }
  if (run.exitCode === FS_EXIT.notFound) {
    return new SandboxPathError('not-found', path, `fs.${method}: ${JSON.stringify(path)} does not exist in the sandbox workspace (${stderr}). Check the path, or create it first with fs.write/fs.mkdir.`)
  }
  if (run.exitCode === FS_EXIT.special) {
    return new SandboxPathError('special-file', path, `fs.${method} refuses ${JSON.stringify(path)}: it is ${stderr}, not a regular file. Only regular files are read and written (a FIFO or device could block or have side effects); remove it or use exec inside the sandbox.`)
  }
  if (run.exitCode === FS_EXIT.hardLink) {
    return new SandboxPathError('hard-link', path, `fs.${method} refuses ${JSON.stringify(path)}: the file has ${stderr} hard links, and another one may be a file outside the workspace. Copy it inside the sandbox (cp) and read the copy, or remove the other links.`)
  }
  if (run.exitCode === FS_EXIT.tooLarge) return tooLargeError(method, path, maxReadBytes, stderr)
  if (run.exitCode === FS_EXIT.loop) {
    return new SandboxPathError('invalid', path, `fs.${method}: ${JSON.stringify(path)} has more than 40 nested symlinks (a loop?). Remove the loop or use the target path directly.`)
  }
  if (run.exitCode === FS_EXIT.root) {
    return new SandboxPathError('invalid', path, `fs.${method} refuses the workspace root itself (${JSON.stringify(path)}). Name an entry inside it, or call handle.destroy() to delete the whole sandbox.`)
  }
  const what = run.exitCode === FS_EXIT.wrongType ? stderr : `exit ${run.exitCode}: ${stderr || 'no output'}`
  return operationError('fs-failed', `fs.${method} failed for ${paths.map((p) => JSON.stringify(p.path)).join(' -> ')} (${what}).`)
}

/** The `file-too-large` error of a read over `maxReadBytes`; `size` when the script measured it. */
function tooLargeError(method: string, path: string, limit: number, size?: string): SandboxLimitError<'file-too-large'> {
  const what = size ? `is ${size} bytes, more than` : 'grew past'
  return new SandboxLimitError('file-too-large', {
    limitBytes: limit,
    option: 'daytonaSandbox({ maxReadBytes })',
    provider: PROVIDER_NAME,
    path,
    message: `fs.${method}: ${JSON.stringify(path)} ${what} the read limit of ${limit} bytes. Raise daytonaSandbox({ maxReadBytes }) or read it in parts with exec (e.g. head -c, split).`,
  })
}

function refuseRoot(method: string, target: Lexical): void {
  if (target.relative !== '') return
  throw new SandboxPathError('invalid', target.path, `fs.${method} refuses the workspace root itself (${JSON.stringify(target.path)}). Name an entry inside it, or call handle.destroy() to delete the whole sandbox.`)
}

/** Parse `stat -c '%f %s %Y'`: raw mode in hex, size in bytes, mtime in seconds. */
function parseStat(line: string, path: string): SandboxFileStat {
  const [rawMode, size, mtime] = line.split(' ')
  const mode = Number.parseInt(rawMode ?? '', 16)
  if (!Number.isFinite(mode) || size === undefined || mtime === undefined) {
    throw operationError('fs-failed', `fs.lstat(${JSON.stringify(path)}): unexpected stat output ${JSON.stringify(line)}.`)
  }
  const format = mode & 0o170000
  const type = format === 0o100000 ? 'file' : format === 0o040000 ? 'directory' : format === 0o120000 ? 'symlink' : 'other'
  return { type, size: Number(size), mode: mode & 0o7777, mtimeMs: Number(mtime) * 1000 }
}
