/**
 * `handle.process` of the local-process provider: `exec` and `spawn` over
 * {@link ProcessGroup}. Owns cwd confinement, the environment merge (host, then
 * sandbox, then per call), timeouts and abort wiring. It must not leave a group
 * untracked: every started group is in the sandbox's live set until it is gone,
 * so `destroy` can kill it. `exec` holds at most `maxExecOutputBytes` of output.
 */
import type { ExecOptions, ExecResult, ProcessOptions, SandboxProcess, SpawnedProcess } from '@tanstack/ai-sandbox'
import { SandboxConfigError, SandboxError, SandboxLimitError, SandboxPathError } from '@tanstack/ai-sandbox'
import { openConfinedDir, withConfinedPath } from './confine.js'
import type { ConfinedDir } from './confine.js'
import { PROVIDER_NAME, errnoCode, fsError, operationError, parseConfig } from './errors.js'
import { startProcessGroup } from './process-group.js'
import type { KillSignal, ProcessGroup } from './process-group.js'
import { envSchema } from './sandbox-state.js'
import type { SandboxState } from './sandbox-state.js'

const KILL_SIGNALS: readonly string[] = ['SIGTERM', 'SIGKILL', 'SIGINT']

/** Build the `process` member of a handle over one sandbox's state. */
export function createLocalProcess(state: SandboxState): SandboxProcess {
  return {
    exec: (command, options = {}) => exec(state, command, options),
    spawn: (command, options = {}) => spawnProcess(state, command, options),
  }
}

async function exec(state: SandboxState, command: string, options: ExecOptions): Promise<ExecResult> {
  const { stdin = '', timeoutMs, signal } = options
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new SandboxConfigError('exec.timeoutMs', `Invalid option exec.timeoutMs: expected a positive number of milliseconds, got ${String(timeoutMs)}.`)
  }
  const group = await start(state, 'exec', command, options)
  group.child.stdin.end(stdin)

  let stopped: { reason: 'timeout' | 'abort' | 'limit'; killed: Promise<void> } | undefined
  let onStop: () => void = () => undefined
  const stop = new Promise<void>((resolve) => (onStop = resolve))
  const stopWith = (reason: 'timeout' | 'abort' | 'limit') => {
    stopped ??= { reason, killed: group.kill('SIGTERM') }
    onStop()
  }
  // Read both pipes as the command writes (they pause when unread), counting bytes against the limit.
  const output = collectOutput(group, state.maxExecOutputBytes, () => stopWith('limit'))
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => stopWith('timeout'), timeoutMs)
  const onAbort = () => stopWith('abort')
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const exit = await Promise.race([group.exit, stop])
    // The last chunks may pass the limit after the exit: the output is complete only once read.
    const result = stopped ? undefined : await output
    if (stopped) {
      await stopped.killed
      if (stopped.reason === 'limit') throw outputLimitError(state.maxExecOutputBytes, command)
      throw stopped.reason === 'timeout'
        ? operationError('timeout', `Command timed out after ${timeoutMs} ms and its process group was killed: ${JSON.stringify(command)}. Raise timeoutMs or run it with process.spawn.`)
        : operationError('aborted', `Command aborted by the caller's AbortSignal; its process group was killed: ${JSON.stringify(command)}.`, signal?.reason)
    }
    return { exitCode: exit!.exitCode, ...result! }
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

/**
 * Read stdout and stderr to their ends. Once together they pass `limit` bytes,
 * `onLimit` is called once and the rest is read and dropped (so the pipes
 * never block the kill).
 */
async function collectOutput(group: ProcessGroup, limit: number, onLimit: () => void): Promise<{ stdout: string; stderr: string }> {
  let bytes = 0
  let over = false
  const read = async (stream: AsyncIterable<string>) => {
    const parts: string[] = []
    for await (const text of stream) {
      if (over) continue
      bytes += Buffer.byteLength(text)
      if (bytes > limit) {
        over = true
        parts.length = 0
        onLimit()
        continue
      }
      parts.push(text)
    }
    return parts.join('')
  }
  const [stdout, stderr] = await Promise.all([read(group.stdout), read(group.stderr)])
  return { stdout, stderr }
}

/** The error of an exec whose output passed `maxExecOutputBytes`; the same reason and fix as the Docker provider's. */
function outputLimitError(limit: number, command: string): SandboxLimitError {
  return new SandboxLimitError('exec-output-too-large', {
    limitBytes: limit,
    option: 'localProcessSandbox({ maxExecOutputBytes })',
    provider: PROVIDER_NAME,
    message:
      `Command printed more than ${limit} bytes (stdout and stderr together), so exec stopped it and killed its process group: ${JSON.stringify(command)}. ` +
      'Redirect the output to a file and read it with fs.readBytes, stream it with process.spawn, or raise localProcessSandbox({ maxExecOutputBytes }).',
  })
}

async function spawnProcess(state: SandboxState, command: string, options: ProcessOptions): Promise<SpawnedProcess> {
  const group = await start(state, 'spawn', command, options)
  const { signal } = options
  let abortKill: Promise<void> | undefined
  const onAbort = () => {
    abortKill = group.kill('SIGTERM')
    // Reported through wait(); never left unhandled.
    abortKill.catch(() => undefined)
  }
  signal?.addEventListener('abort', onAbort, { once: true })
  void group.exit.then(() => signal?.removeEventListener('abort', onAbort))

  return {
    pid: group.pgid,
    stdout: group.stdout,
    stderr: group.stderr,
    stdin: stdinOf(group),
    wait: async () => {
      if (!abortKill) return group.exit
      // A failed abort-kill leaves live processes; surface it instead of waiting forever.
      await Promise.race([group.exit, abortKill])
      return group.exit
    },
    kill: (killSignal: KillSignal = 'SIGTERM') => {
      if (!KILL_SIGNALS.includes(killSignal)) {
        return Promise.reject(new SandboxConfigError('kill.signal', `Invalid option kill.signal: expected one of ${KILL_SIGNALS.join(', ')}, got ${JSON.stringify(killSignal)}.`))
      }
      return group.kill(killSignal)
    },
  }
}

/** Validate, confine the cwd, merge the environment and start the group. */
async function start(state: SandboxState, method: 'exec' | 'spawn', command: string, options: ProcessOptions): Promise<ProcessGroup> {
  state.assertLive(`process.${method}`)
  if (typeof command !== 'string' || command.trim() === '') {
    throw new SandboxConfigError(`${method}.command`, `Invalid option ${method}.command: expected a non-empty shell command string.`)
  }
  if (options.signal?.aborted) {
    throw operationError('aborted', `process.${method} was not started: the AbortSignal is already aborted.`, options.signal.reason)
  }
  const callEnv = options.env === undefined ? {} : parseConfig(envSchema, options.env, `${method}.env`)
  const cwd = await openCwd(state, options.cwd ?? '.')
  const env = { ...process.env, ...state.env, ...callEnv }
  // The shell starts in the directory the no-follow walk opened (on Linux through its descriptor), whatever is swapped meanwhile.
  const group = await startProcessGroup(command, {
    cwd: cwd.at(),
    env,
    sandboxId: state.id,
    graceMs: state.killGraceMs,
    onGone: (gone) => state.groups.delete(gone),
  }).finally(() => {
    // Not awaited: the group must be recorded before its exit can be observed.
    void cwd.close().catch(() => undefined)
  })
  state.groups.add(group)
  if (state.destroyed) {
    // destroy() ran while the shell was starting: it missed this group, so stop it here.
    await group.kill('SIGKILL')
    state.assertLive(`process.${method}`)
  }
  return group
}

/** Open the confined cwd with the no-follow walk; the caller closes it once the shell started. */
async function openCwd(state: SandboxState, cwd: string): Promise<ConfinedDir> {
  try {
    return await withConfinedPath(cwd, state.workspaceRoot, true, ({ host }) => openConfinedDir(state.workspaceRoot, host, false))
  } catch (error) {
    if (SandboxError.isInstance(error)) throw error
    if (errnoCode(error) !== 'ENOENT' && errnoCode(error) !== 'ENOTDIR') throw fsError('stat', cwd, error)
  }
  throw new SandboxPathError('not-found', cwd, `Working directory ${JSON.stringify(cwd)} does not exist in the sandbox workspace (or is not a directory). Create it with fs.mkdir first.`)
}

function stdinOf(group: ProcessGroup): SpawnedProcess['stdin'] {
  const stream = group.child.stdin
  return {
    write: (data) =>
      new Promise<void>((resolve, reject) => {
        if (stream.writableEnded || stream.destroyed) {
          reject(operationError('exec-failed', `stdin of process ${group.pgid} is closed; write before calling stdin.end().`))
          return
        }
        stream.write(data, (error) => (error ? reject(operationError('exec-failed', `Writing to stdin of process ${group.pgid} failed: ${error.message}`, error)) : resolve()))
      }),
    end: () =>
      new Promise<void>((resolve) => {
        if (stream.writableFinished || stream.destroyed) return resolve()
        // Resolve on finish, close or error alike: an EPIPE means the process already
        // stopped reading, and stdin is closed either way.
        stream.once('close', () => resolve())
        stream.once('finish', () => resolve())
        if (!stream.writableEnded) stream.end()
      }),
  }
}
