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
import { SandboxLimitError, toSandboxPath, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import { checkExecOptions, checkProcessCall, envVarsSchema, spawnControls, watchExecStop } from '@tanstack/ai-sandbox/internal'
import { parseConfig, PROVIDER_NAME } from './errors.js'
import { killJob, newJobId, runJob, startJob } from './job.js'
import type { JobInput, KillSignal } from './job.js'
import type { SandboxState } from './state.js'

/** Build the `process` member of a handle over one sandbox's state. */
export function createDaytonaProcess(state: SandboxState): SandboxProcess {
  return {
    exec: (command, options = {}) => exec(state, command, options),
    spawn: (command, options = {}) => spawnProcess(state, command, options),
  }
}

async function exec(state: SandboxState, command: string, options: ExecOptions): Promise<ExecResult> {
  checkExecOptions(options, { stringStdin: true })
  const input = jobInput(state, 'exec', command, options)
  const id = newJobId()
  const stopper = watchExecStop({ provider: PROVIDER_NAME, command, timeoutMs: options.timeoutMs, signal: options.signal, kill: () => killJob(state, id, 'SIGTERM') })
  try {
    const result = await runJob(state, id, command, input)
    await stopper.throwIfStopped()
    const bytes = Buffer.byteLength(result.stdout) + Buffer.byteLength(result.stderr)
    if (bytes > state.config.maxExecOutputBytes) throw outputTooLarge(state, command)
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr }
  } finally {
    stopper.dispose()
  }
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
    ...spawnControls({ exit: job.exit, signal: options.signal, kill }),
  }
}

/** Validate the command and options, map the cwd. */
function jobInput(state: SandboxState, method: 'exec' | 'spawn', command: string, options: ExecOptions): JobInput {
  state.assertLive(`process.${method}`)
  checkProcessCall(PROVIDER_NAME, method, command, options.signal)
  const env = options.env === undefined ? {} : parseConfig(envVarsSchema, options.env, `${method}.env`)
  const cwd = toSandboxPath(options.cwd ?? '.', state.workspaceRoot)
  return { cwd, env, ...(options.stdin !== undefined ? { stdin: options.stdin } : {}) }
}
