/**
 * The toolbox routes (`/toolbox/{sandboxId}/…`, the DTO's `toolboxProxyUrl`
 * plus the id): process execute, the sessions (sessions.ts) and the file operations, each run as a
 * `docker exec` in the sandbox's container as the `daytona` user. Bodies are
 * typed against `@daytona/toolbox-api-client`'s models.
 */
import { randomUUID } from 'node:crypto'
import { posix } from 'node:path'
import type { Context, Hono } from 'hono'
import type { ExecuteRequest, ExecuteResponse, FileInfo, FilesDownloadRequest } from '@daytona/toolbox-api-client'
import type { ExecResult, SandboxEngine } from './engine.js'
import { SANDBOX_WORKDIR } from './engine.js'
import { DaemonError, StandinError } from './errors.js'
import type { SessionStore } from './sessions.js'
import { sessionRoutes } from './sessions.js'
import type { SandboxRecord, SandboxStore } from './control.js'

/** The daemon's default bound on `process/execute` when the request names none, in seconds. */
export const DEFAULT_EXECUTE_TIMEOUT_S = 10

/** Exit status of GNU `timeout` when it had to kill the command. */
const TIMED_OUT = new Set([124, 137])

/** A path as the daemon resolves it: relative ones against the workdir. */
const resolvePath = (path: string): string => posix.resolve(SANDBOX_WORKDIR, path)

/** `find -printf` fields of one entry, NUL-separated: name, path, size, type, symbolic mode, octal mode, owner, group, mtime. */
const INFO_FORMAT = '%f\\0%p\\0%s\\0%y\\0%M\\0%m\\0%u\\0%g\\0%T@\\0'

/**
 * The file-operation scripts, run with `sh -c <script> sh <args…>`. Exit 44
 * means "no such path", 45 "is a directory" / "is not empty", so the route
 * can answer with the daemon's status and code.
 */
const SCRIPTS = {
  write: 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"',
  read: '[ -e "$1" ] || exit 44; [ -d "$1" ] && exit 45; exec cat -- "$1"',
  info: `[ -e "$1" ] || [ -L "$1" ] || exit 44; exec find "$1" -maxdepth 0 -printf '${INFO_FORMAT}'`,
  list: `[ -e "$1" ] || exit 44; exec find "$1" -mindepth 1 -maxdepth "$2" -printf '${INFO_FORMAT}'`,
  mkdir: 'mkdir -p -- "$1" && chmod "$2" -- "$1"',
  move: '[ -e "$1" ] || [ -L "$1" ] || exit 44; exec mv -- "$1" "$2"',
  remove: '[ -e "$1" ] || [ -L "$1" ] || exit 44; if [ "$2" = true ]; then exec rm -rf -- "$1"; fi; [ -d "$1" ] && [ ! -L "$1" ] && exit 45; exec rm -f -- "$1"',
} as const

/** Parse `find -printf INFO_FORMAT` output into the daemon's FileInfo records. */
function parseInfos(output: Buffer): FileInfo[] {
  const fields = output.toString('utf8').split('\0')
  const infos: FileInfo[] = []
  for (let i = 0; i + 9 <= fields.length; i += 9) {
    const [name, path, size, type, mode, octal, owner, group, mtime] = fields.slice(i, i + 9) as [string, string, string, string, string, string, string, string, string]
    const modified = new Date(Number(mtime) * 1000).toISOString()
    infos.push({ name, path, size: Number(size), isDir: type === 'd', mode, permissions: octal.padStart(4, '0'), owner, group, modTime: modified, modifiedAt: modified })
  }
  return infos
}

/** Go's multipart quoting of a filename: backslash and double quote escaped. */
const quoteFilename = (name: string): string => name.replace(/\\/g, '\\\\').replace(/"/g, '\\"')

/** Register the toolbox routes on `app`. */
export function toolboxRoutes(app: Hono, engine: SandboxEngine, store: SandboxStore, sessions: SessionStore): void {
  /** The sandbox of the request, which must be started (its container is running). */
  const started = (c: Context): SandboxRecord => {
    const record = store.find(c.req.param('sandboxId')!)
    if (record.dto.state !== 'started') throw new StandinError(409, `Sandbox ${record.dto.id} is ${record.dto.state}; start it before using the toolbox`)
    return record
  }
  const script = (record: SandboxRecord, name: keyof typeof SCRIPTS, args: string[], stdin?: Buffer): Promise<ExecResult> =>
    engine.exec(record.containerId, { cmd: ['sh', '-c', SCRIPTS[name], 'sh', ...args], ...(stdin !== undefined ? { stdin } : {}) })
  /** Throw the daemon's error for a failed file script (44 not found, 45 a directory). */
  const check = (run: ExecResult, path: string, what: string): ExecResult => {
    if (run.exitCode === 0) return run
    if (run.exitCode === 44) throw new DaemonError(404, `${what}: file not found: ${path}`, 'FILE_NOT_FOUND')
    if (run.exitCode === 45) throw new DaemonError(400, `${what}: ${path} is a directory (pass recursive to delete one)`)
    throw new DaemonError(500, `${what} ${path} failed (${run.exitCode}): ${run.stderr.toString('utf8').trim()}`)
  }
  const queryPath = (c: Context, name = 'path'): string => {
    const value = c.req.query(name)
    if (value === undefined || value === '') throw new StandinError(400, `query parameter ${name} is required`)
    return resolvePath(value)
  }

  sessionRoutes(app, engine, sessions, started)

  app.post('/toolbox/:sandboxId/process/execute', async (c) => {
    const record = started(c)
    const body = (await c.req.json()) as ExecuteRequest
    if (typeof body.command !== 'string' || body.command === '') throw new StandinError(400, 'command is required')
    const timeout = body.timeout ?? DEFAULT_EXECUTE_TIMEOUT_S
    const shell = ['sh', '-c', body.command]
    const bounded = timeout > 0 ? ['timeout', '-k', '1', String(timeout), ...shell] : shell
    // One pipe for both streams, as the daemon's combined output has it: the order is the order of the writes.
    const cmd = ['sh', '-c', 'exec "$@" 2>&1', 'sh', ...bounded]
    const startedAt = Date.now()
    const run = await engine.exec(record.containerId, { cmd, env: body.envs ?? {}, cwd: body.cwd !== undefined ? resolvePath(body.cwd) : SANDBOX_WORKDIR })
    if (timeout > 0 && TIMED_OUT.has(run.exitCode) && Date.now() - startedAt >= timeout * 1000) {
      throw new DaemonError(408, `command timed out after ${timeout} s`, 'PROCESS_EXECUTION_TIMEOUT')
    }
    const response: ExecuteResponse = { exitCode: run.exitCode, result: run.stdout.toString('utf8') }
    return c.json(response)
  })

  app.post('/toolbox/:sandboxId/files/bulk-upload', async (c) => {
    const record = started(c)
    const form = await c.req.parseBody({ all: true })
    for (let i = 0; form[`files[${i}].path`] !== undefined; i++) {
      const path = form[`files[${i}].path`]
      const file = form[`files[${i}].file`]
      if (typeof path !== 'string' || !(file instanceof File)) throw new StandinError(400, `files[${i}] needs a path field and a file part`)
      check(await script(record, 'write', [resolvePath(path)], Buffer.from(await file.arrayBuffer())), path, 'upload')
    }
    return c.body(null, 200)
  })

  app.post('/toolbox/:sandboxId/files/bulk-download', async (c) => {
    const record = started(c)
    const { paths } = (await c.req.json()) as FilesDownloadRequest
    const boundary = `standin-${randomUUID()}`
    const parts: Buffer[] = []
    for (const path of paths) {
      const run = await script(record, 'read', [resolvePath(path)])
      let name = 'file'
      let type = 'application/octet-stream'
      let bytes = run.stdout
      if (run.exitCode !== 0) {
        const error = run.exitCode === 44 ? { statusCode: 404, message: `file not found: ${path}`, code: 'FILE_NOT_FOUND' } : run.exitCode === 45 ? { statusCode: 400, message: `${path} is a directory` } : { statusCode: 500, message: run.stderr.toString('utf8').trim() }
        name = 'error'
        type = 'application/json'
        bytes = Buffer.from(JSON.stringify(error))
      }
      const head = `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${quoteFilename(path)}"\r\nContent-Type: ${type}\r\nContent-Length: ${bytes.length}\r\n\r\n`
      parts.push(Buffer.from(head), bytes, Buffer.from('\r\n'))
    }
    parts.push(Buffer.from(`--${boundary}--\r\n`))
    return c.body(Buffer.concat(parts), 200, { 'Content-Type': `multipart/form-data; boundary=${boundary}` })
  })

  app.get('/toolbox/:sandboxId/files', async (c) => {
    const record = started(c)
    const path = queryPath(c)
    const depth = Number(c.req.query('depth') ?? '1')
    if (!Number.isInteger(depth) || depth < 1) throw new StandinError(400, 'depth must be an integer of at least 1')
    const run = check(await script(record, 'list', [path, String(depth)]), path, 'list')
    return c.json(parseInfos(run.stdout))
  })

  app.get('/toolbox/:sandboxId/files/info', async (c) => {
    const record = started(c)
    const path = queryPath(c)
    const [info] = parseInfos(check(await script(record, 'info', [path]), path, 'info').stdout)
    return c.json(info)
  })

  app.post('/toolbox/:sandboxId/files/folder', async (c) => {
    const record = started(c)
    const path = queryPath(c)
    const mode = c.req.query('mode') ?? '755'
    if (!/^[0-7]{3,4}$/.test(mode)) throw new StandinError(400, `mode must be octal digits, got ${mode}`)
    check(await script(record, 'mkdir', [path, mode]), path, 'create folder')
    return c.body(null, 201)
  })

  app.post('/toolbox/:sandboxId/files/move', async (c) => {
    const record = started(c)
    const source = queryPath(c, 'source')
    check(await script(record, 'move', [source, queryPath(c, 'destination')]), source, 'move')
    return c.body(null, 200)
  })

  app.delete('/toolbox/:sandboxId/files', async (c) => {
    const record = started(c)
    const path = queryPath(c)
    check(await script(record, 'remove', [path, c.req.query('recursive') === 'true' ? 'true' : 'false']), path, 'delete')
    return c.body(null, 204)
  })
}
