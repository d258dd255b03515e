/**
 * `handle.fs` of the Docker provider: each call is one run of {@link FS_SCRIPT}
 * in the container as the sandbox user, the path as an argument; bytes travel
 * raw over the exec connection. Owns mapping the script's exit codes onto typed
 * errors. It never builds a shell string from a path, and never reads through
 * the engine's archive API.
 * Design notes: docs/design/docker.md
 */
import { SandboxError, SandboxLimitError, SandboxPathError, toWorkspaceRelative } from '@tanstack/ai-sandbox'
import type { SandboxDirEntry, SandboxFileStat, SandboxFs } from '@tanstack/ai-sandbox'
import { PROVIDER_NAME, containerGoneError, engineError, operationError } from './errors.js'
import { startExec } from './exec-stream.js'
import { FS_EXIT, FS_SCRIPT } from '@tanstack/ai-sandbox/internal'
import type { FsOp } from '@tanstack/ai-sandbox/internal'
import type { SandboxState } from './state.js'

/** A caller path mapped lexically onto the workspace. */
interface Lexical {
  /** As given. */
  readonly path: string
  /** Workspace-relative, `''` for the root. */
  readonly relative: string
  /** What the script gets: `relative`, or `.` for the root. */
  readonly arg: string
}

/** What one script run produced. */
interface FsRun {
  readonly code: number
  readonly stdout: Buffer
  readonly stderr: string
}

/** Build the `fs` member of a handle over one sandbox's state. */
export function createDockerFs(state: SandboxState): SandboxFs {
  const lexical = (path: string): Lexical => {
    const relative = toWorkspaceRelative(path, state.workspaceRoot)
    return { path, relative, arg: relative === '' ? '.' : relative }
  }

  /** Liveness check, lexical mapping, one script run, exit-code mapping. */
  async function op(method: string, op: FsOp, paths: Lexical[], extra: string[] = [], stdin?: Uint8Array | string): Promise<FsRun> {
    state.assertLive(`fs.${method}`)
    const run = await runScript(state, method, [op, state.physicalRoot, ...paths.map((p) => p.arg), ...extra], stdin)
    if (run.code === 0) return run
    throw fsError(method, paths, run, state.maxReadBytes)
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
      await op('write', 'write', [target], [], data)
    },

    list: async (path = '.') => {
      const target = lexical(path)
      const { stdout } = await op('list', 'list', [target])
      const entries: SandboxDirEntry[] = []
      for (const record of stdout.toString('utf8').split('\0')) {
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
      return stdout.toString() === '1'
    },

    lstat: async (path) => {
      const { stdout } = await op('lstat', 'lstat', [lexical(path)])
      return parseStat(stdout.toString().trim(), path)
    },
  }

  /**
   * Streamed by `head -c` as the sandbox user, so only bytes that user can read
   * ever arrive, and at most one byte more than the limit (a file that grew
   * past it between the size check and the copy).
   */
  async function readBytes(method: 'read' | 'readBytes', target: Lexical): Promise<Buffer> {
    const limit = state.maxReadBytes
    const { stdout } = await op(method, 'read', [target], [String(limit)])
    if (stdout.byteLength > limit) throw tooLargeError(method, target.path, limit)
    return stdout
  }
}

const ENTRY_TYPES: Readonly<Record<string, SandboxDirEntry['type']>> = { f: 'file', d: 'directory', l: 'symlink', o: 'other' }

/** Run the fs script once as the sandbox user, collecting stdout as bytes. */
async function runScript(state: SandboxState, method: string, args: string[], stdin?: Uint8Array | string): Promise<FsRun> {
  const stdout: Buffer[] = []
  const stderr: Buffer[] = []
  let code: number | null
  try {
    const running = await startExec(
      state.container,
      { cmd: ['/bin/sh', '-c', FS_SCRIPT, 'tanstack-sandbox-fs', ...args], user: state.user, env: ['LC_ALL=C'], stdin: stdin !== undefined },
      { stdout: (bytes) => stdout.push(bytes), stderr: (bytes) => stderr.push(bytes) },
    )
    if (stdin !== undefined) running.stdin.end(typeof stdin === 'string' ? stdin : Buffer.from(stdin.buffer, stdin.byteOffset, stdin.byteLength))
    code = await running.exit
    if (running.truncated()) throw operationError('fs-failed', `fs.${method}: the connection to the engine ended mid-transfer. Try again.`)
  } catch (error) {
    throw engineError('fs-failed', `fs.${method}`, error, { endpoint: state.endpoint, id: state.id })
  }
  if (code === null) throw containerGoneError(state.id, `fs.${method}`)
  return { code, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr).toString('utf8').trim() }
}

/** Map a non-zero exit of the fs script onto a typed error. */
function fsError(method: string, paths: Lexical[], run: FsRun, maxReadBytes: number): SandboxError {
  const [first, second] = paths
  const path = first?.path ?? '.'
  if (run.code === FS_EXIT.escape) {
    const [label, ...rest] = run.stderr.split('\n')
    const culprit = label === 'to' && second ? second.path : path
    return new SandboxPathError('symlink-escape', culprit, `fs.${method}: ${JSON.stringify(culprit)} goes through a symlink that leads outside the sandbox workspace (to ${JSON.stringify(rest.join('\n'))}). Only symlinks that stay inside the workspace can be followed.`)
  }
  if (run.code === FS_EXIT.notFound) {
    return new SandboxPathError('not-found', path, `fs.${method}: ${JSON.stringify(path)} does not exist in the sandbox workspace (${run.stderr}). Check the path, or create it first with fs.write/fs.mkdir.`)
  }
  if (run.code === FS_EXIT.special) {
    return new SandboxPathError('special-file', path, `fs.${method} refuses ${JSON.stringify(path)}: it is ${run.stderr}, not a regular file. The host only reads and writes regular files (a FIFO or device could block it or have side effects); remove it or use exec inside the sandbox.`)
  }
  if (run.code === FS_EXIT.hardLink) {
    return new SandboxPathError('hard-link', path, `fs.${method} refuses ${JSON.stringify(path)}: the file has ${run.stderr} hard links, and another one may be a file outside the workspace. Copy it inside the sandbox (cp) and read the copy, or remove the other links.`)
  }
  if (run.code === FS_EXIT.tooLarge) return tooLargeError(method, path, maxReadBytes, run.stderr)
  if (run.code === FS_EXIT.loop) {
    return new SandboxPathError('invalid', path, `fs.${method}: ${JSON.stringify(path)} has more than 40 nested symlinks (a loop?). Remove the loop or use the target path directly.`)
  }
  if (run.code === FS_EXIT.root) {
    return new SandboxPathError('invalid', path, `fs.${method} refuses the workspace root itself (${JSON.stringify(path)}). Name an entry inside it, or call handle.destroy() to delete the whole sandbox.`)
  }
  const what = run.code === FS_EXIT.wrongType ? run.stderr : `exit ${run.code}: ${run.stderr || 'no output'}`
  return operationError('fs-failed', `fs.${method} failed for ${paths.map((p) => JSON.stringify(p.path)).join(' -> ')} (${what}).`)
}

/** The `file-too-large` error of a read over `maxReadBytes`; `size` when the script measured it. */
function tooLargeError(method: string, path: string, limit: number, size?: string): SandboxLimitError<'file-too-large'> {
  const what = size ? `is ${size} bytes, more than` : 'grew past'
  return new SandboxLimitError('file-too-large', {
    limitBytes: limit,
    option: 'dockerSandbox({ maxReadBytes })',
    provider: PROVIDER_NAME,
    path,
    message: `fs.${method}: ${JSON.stringify(path)} ${what} the read limit of ${limit} bytes. Raise dockerSandbox({ maxReadBytes }) or read it in parts with exec (e.g. head -c, split).`,
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
