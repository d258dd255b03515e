/**
 * `handle.fs` of the Docker provider: each call is one run of {@link FS_SCRIPT}
 * in the container as the sandbox user, the path as an argument; bytes travel
 * raw over the exec connection; core maps the script's exit codes onto typed
 * errors, and core's `scriptFs` maps paths and reads list/exists/lstat output
 * (shared with Daytona and Cloudflare). It never builds a shell string from a path,
 * and never reads through the engine's archive API.
 * Design notes: docs/design/docker.md
 */
import type { SandboxFs } from '@tanstack/ai-sandbox'
import { PROVIDER_NAME, containerGoneError, engineError, operationError } from './errors.js'
import { startExec } from './exec-stream.js'
import { FS_SCRIPT, fsScriptError, fsTooLargeError, scriptFs } from '@tanstack/ai-sandbox/internal'
import type { FsOp, FsScriptOwner, FsScriptPath } from '@tanstack/ai-sandbox/internal'
import type { SandboxState } from './state.js'

/** Names this provider in the shared fs-script errors. */
const OWNER: FsScriptOwner = { provider: PROVIDER_NAME, readLimitOption: 'dockerSandbox({ maxReadBytes })' }

/** What one script run produced. */
interface FsRun {
  readonly code: number
  readonly stdout: Buffer
  readonly stderr: string
}

/** Build the `fs` member of a handle over one sandbox's state. */
export function createDockerFs(state: SandboxState): SandboxFs {
  /** Liveness check, one script run, exit-code mapping. */
  async function op(method: string, op: FsOp, paths: FsScriptPath[], extra: string[] = [], stdin?: Uint8Array | string): Promise<FsRun> {
    state.assertLive(`fs.${method}`)
    const run = await runScript(state, method, [op, state.physicalRoot, ...paths.map((p) => p.arg), ...extra], stdin)
    if (run.code === 0) return run
    throw fsScriptError(OWNER, method, paths, { code: run.code, stderr: run.stderr }, state.maxReadBytes)
  }

  return scriptFs({
    owner: OWNER,
    workspaceRoot: state.workspaceRoot,
    run: async (method, fsOp, paths) => (await op(method, fsOp, paths)).stdout.toString('utf8'),
    read: async (target) => (await readBytes('read', target)).toString('utf8'),
    readBytes: async (target) => {
      const bytes = await readBytes('readBytes', target)
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    },
    write: async (target, data) => {
      await op('write', 'write', [target], [], data)
    },
  })

  /**
   * Streamed by `head -c` as the sandbox user, so only bytes that user can read
   * ever arrive, and at most one byte more than the limit (a file that grew
   * past it between the size check and the copy).
   */
  async function readBytes(method: 'read' | 'readBytes', target: FsScriptPath): Promise<Buffer> {
    const limit = state.maxReadBytes
    const { stdout } = await op(method, 'read', [target], [String(limit)])
    if (stdout.byteLength > limit) throw fsTooLargeError(OWNER, method, target.path, limit)
    return stdout
  }
}

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
