/**
 * `handle.process` of the local-process provider: `exec` and `spawn` over
 * {@link ProcessGroup}. Owns cwd confinement, the environment merge (host, then
 * sandbox, then per call), timeouts and abort wiring. It must not leave a group
 * untracked: every started group is in the sandbox's live set until it is gone,
 * so `destroy` can kill it.
 */
import { stat } from 'node:fs/promises'
import type { ExecOptions, ExecResult, ProcessOptions, SandboxProcess, SpawnedProcess } from '@tanstack/ai-sandbox'
import { SandboxConfigError, SandboxPathError } from '@tanstack/ai-sandbox'
import { confinePath } from './confine.js'
import { errnoCode, fsError, operationError, parseConfig } from './errors.js'
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

  let stopped: { reason: 'timeout' | 'abort'; killed: Promise<void> } | undefined
  let onStop: () => void = () => undefined
  const stop = new Promise<void>((resolve) => (onStop = resolve))
  const stopWith = (reason: 'timeout' | 'abort') => {
    stopped ??= { reason, killed: group.kill('SIGTERM') }
    onStop()
  }
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => stopWith('timeout'), timeoutMs)
  const onAbort = () => stopWith('abort')
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const exit = await Promise.race([group.exit, stop])
    if (stopped) {
      await stopped.killed
      throw stopped.reason === 'timeout'
        ? operationError('timeout', `Command timed out after ${timeoutMs} ms and its process group was killed: ${JSON.stringify(command)}. Raise timeoutMs or run it with process.spawn.`)
        : operationError('aborted', `Command aborted by the caller's AbortSignal; its process group was killed: ${JSON.stringify(command)}.`, signal?.reason)
    }
    return { exitCode: exit!.exitCode, stdout: group.stdout.drain(), stderr: group.stderr.drain() }
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
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
  const cwd = await resolveCwd(state, options.cwd ?? '.')
  const env = { ...process.env, ...state.env, ...callEnv }
  const group = await startProcessGroup(command, {
    cwd,
    env,
    graceMs: state.killGraceMs,
    onGone: () => state.groups.delete(group),
  })
  state.groups.add(group)
  if (state.destroyed) {
    // destroy() ran while the shell was starting: it missed this group, so stop it here.
    await group.kill('SIGKILL')
    state.assertLive(`process.${method}`)
  }
  return group
}

async function resolveCwd(state: SandboxState, cwd: string): Promise<string> {
  const { host } = await confinePath(cwd, state.workspaceRoot, true)
  try {
    const info = await stat(host)
    if (info.isDirectory()) return host
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw fsError('stat', cwd, error)
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
