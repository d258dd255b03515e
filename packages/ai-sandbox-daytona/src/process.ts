/**
 * `handle.process` of the Daytona provider: `exec` and `spawn` over jobs
 * (job.ts). Owns option checks, cwd mapping, timeouts, abort wiring and the
 * exec output limit. Every stop (timeout, abort, `kill()`) goes through the
 * job's group kill, never through closing a log stream. stdin of a spawned
 * process is not writable (Daytona has no end-of-input), so `stdin.write`
 * throws `UnsupportedCapabilityError("writableStdin")`.
 */
import { PassThrough } from 'node:stream'
import type { ExecOptions, ExecResult, ProcessOptions, SandboxProcess, SpawnedProcess } from '@tanstack/ai-sandbox'
import { SandboxConfigError, SandboxLimitError, toSandboxPath, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import { envSchema } from './config.js'
import { operationError, parseConfig, PROVIDER_NAME } from './errors.js'
import { killJob, newJobId, runJob, startJob } from './job.js'
import type { JobInput, KillSignal } from './job.js'
import type { SandboxState } from './state.js'

const KILL_SIGNALS: readonly string[] = ['SIGTERM', 'SIGKILL', 'SIGINT']

/** Build the `process` member of a handle over one sandbox's state. */
export function createDaytonaProcess(state: SandboxState): SandboxProcess {
  return {
    exec: (command, options = {}) => exec(state, command, options),
    spawn: (command, options = {}) => spawnProcess(state, command, options),
  }
}

type StopReason = 'timeout' | 'abort'

async function exec(state: SandboxState, command: string, options: ExecOptions): Promise<ExecResult> {
  const { timeoutMs, signal } = options
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new SandboxConfigError('exec.timeoutMs', `Invalid option exec.timeoutMs: expected a positive number of milliseconds, got ${String(timeoutMs)}.`)
  }
  if (options.stdin !== undefined && typeof options.stdin !== 'string') {
    throw new SandboxConfigError('exec.stdin', 'Invalid option exec.stdin: expected a string.')
  }
  const input = jobInput(state, 'exec', command, options)
  const id = newJobId()
  let stopped: { reason: StopReason; killed: Promise<void> } | undefined
  const stop = (reason: StopReason) => {
    if (stopped) return
    stopped = { reason, killed: killJob(state, id, 'SIGTERM') }
    stopped.killed.catch(() => undefined)
  }
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => stop('timeout'), timeoutMs)
  const onAbort = () => stop('abort')
  signal?.addEventListener('abort', onAbort, { once: true })
  try {
    const result = await runJob(state, id, command, input)
    if (stopped) {
      await stopped.killed
      throw stoppedError(stopped.reason, command, timeoutMs, signal)
    }
    const bytes = Buffer.byteLength(result.stdout) + Buffer.byteLength(result.stderr)
    if (bytes > state.config.maxExecOutputBytes) throw outputTooLarge(state, command)
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

function stoppedError(reason: StopReason, command: string, timeoutMs: number | undefined, signal: AbortSignal | undefined) {
  if (reason === 'timeout') return operationError('timeout', `Command timed out after ${timeoutMs} ms and its process group was killed: ${JSON.stringify(command)}. Raise timeoutMs or run it with process.spawn.`)
  return operationError('aborted', `Command aborted by the caller's AbortSignal; its process group was killed: ${JSON.stringify(command)}.`, signal?.reason)
}

function outputTooLarge(state: SandboxState, command: string): SandboxLimitError<'exec-output-too-large'> {
  const limit = state.config.maxExecOutputBytes
  return new SandboxLimitError('exec-output-too-large', {
    limitBytes: limit,
    option: 'daytonaSandbox({ maxExecOutputBytes })',
    provider: PROVIDER_NAME,
    message:
      `Command printed more than ${limit} bytes (stdout and stderr together): ${JSON.stringify(command)}. Daytona returns an exec's output when it ends, so the command ran to its end. ` +
      'Redirect the output to a file and read it with fs.readBytes, stream it with process.spawn, or raise daytonaSandbox({ maxExecOutputBytes }).',
  })
}

async function spawnProcess(state: SandboxState, command: string, options: ProcessOptions): Promise<SpawnedProcess> {
  const input = jobInput(state, 'spawn', command, options)
  const id = newJobId()
  const stdout = new PassThrough({ encoding: 'utf8' })
  const stderr = new PassThrough({ encoding: 'utf8' })
  const job = await startJob(state, id, command, input, {
    stdout: (text) => stdout.write(text),
    stderr: (text) => stderr.write(text),
    end: () => {
      stdout.end()
      stderr.end()
    },
  })
  const pid = await job.started
  let killing: Promise<void> | undefined
  const kill = (killSignal: KillSignal) => {
    job.signalled(killSignal)
    killing ??= killJob(state, id, killSignal).finally(() => (killing = undefined))
    return killing
  }
  const { signal } = options
  let abortKill: Promise<void> | undefined
  const onAbort = () => {
    abortKill = kill('SIGTERM')
    abortKill.catch(() => undefined)
  }
  signal?.addEventListener('abort', onAbort, { once: true })
  if (signal?.aborted) onAbort()
  void job.exit.finally(() => signal?.removeEventListener('abort', onAbort)).catch(() => undefined)
  const noStdin = () =>
    Promise.reject(
      new UnsupportedCapabilityError({
        provider: PROVIDER_NAME,
        capability: 'writableStdin',
        method: 'stdin.write',
        hint: 'Daytona sessions take input but can never close it, so a process reading stdin to its end would wait forever. Write the input to a file (fs.write) and redirect it: spawn("cmd < file").',
      }),
    )
  return {
    pid,
    stdout,
    stderr,
    stdin: { write: noStdin, end: async () => undefined },
    wait: async () => {
      if (!abortKill) return job.exit
      // A failed abort-kill leaves live processes; surface it instead of waiting forever.
      await Promise.race([job.exit, abortKill])
      return job.exit
    },
    kill: (killSignal: KillSignal = 'SIGTERM') => {
      if (!KILL_SIGNALS.includes(killSignal)) {
        return Promise.reject(new SandboxConfigError('kill.signal', `Invalid option kill.signal: expected one of ${KILL_SIGNALS.join(', ')}, got ${JSON.stringify(killSignal)}.`))
      }
      return kill(killSignal)
    },
  }
}

/** Validate the command and options, map the cwd. */
function jobInput(state: SandboxState, method: 'exec' | 'spawn', command: string, options: ExecOptions): JobInput {
  state.assertLive(`process.${method}`)
  if (typeof command !== 'string' || command.trim() === '') {
    throw new SandboxConfigError(`${method}.command`, `Invalid option ${method}.command: expected a non-empty shell command string.`)
  }
  if (options.signal?.aborted) {
    throw operationError('aborted', `process.${method} was not started: the AbortSignal is already aborted.`, options.signal.reason)
  }
  const env = options.env === undefined ? {} : parseConfig(envSchema, options.env, `${method}.env`)
  const cwd = toSandboxPath(options.cwd ?? '.', state.workspaceRoot)
  return { cwd, env, ...(options.stdin !== undefined ? { stdin: options.stdin } : {}) }
}
