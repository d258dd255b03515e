/**
 * `handle.process` of the Docker provider: `exec` and `spawn` over {@link Job}.
 * Owns cwd mapping, the environment merge (container config, then `env.set`,
 * then per call), timeouts, abort wiring and the exec output limit. It must
 * not lose a job: every kill path (timeout, abort, limit, `kill()`) goes
 * through the job's group kill, never through closing the connection.
 */
import type { ExecOptions, ExecResult, ProcessOptions, SandboxProcess, SpawnedProcess } from '@tanstack/ai-sandbox'
import { SandboxLimitError, toSandboxPath } from '@tanstack/ai-sandbox'
import { checkExecOptions, checkProcessCall, envVarsSchema, execStoppedError, spawnControls } from '@tanstack/ai-sandbox/internal'
import type { ExecStopReason } from '@tanstack/ai-sandbox/internal'
import { PROVIDER_NAME, engineError, operationError, parseConfig } from './errors.js'
import { Job } from './job.js'
import { envList } from './state.js'
import type { SandboxState } from './state.js'
import { TextStream, throttle } from './text-stream.js'

/** Build the `process` member of a handle over one sandbox's state. */
export function createDockerProcess(state: SandboxState): SandboxProcess {
  return {
    exec: (command, options = {}) => exec(state, command, options),
    spawn: (command, options = {}) => spawnProcess(state, command, options),
  }
}

async function exec(state: SandboxState, command: string, options: ExecOptions): Promise<ExecResult> {
  const { stdin, timeoutMs, signal } = options
  // stdin stays unchecked: it goes straight to the exec connection.
  checkExecOptions(options, { stringStdin: false })
  const stdout: Buffer[] = []
  const stderr: Buffer[] = []
  let bytes = 0
  // The job is set once start() returns; a stop requested before that (only the
  // output limit can trip so early) is applied right after.
  const run: { job?: Job; requested?: StopReason; stopped?: { reason: StopReason; killed: Promise<void> } } = {}
  let onStop: () => void = () => undefined
  const stop = new Promise<void>((resolve) => (onStop = resolve))
  const stopWith = (reason: StopReason) => {
    if (run.stopped) return
    if (!run.job) {
      run.requested = reason
      return
    }
    run.stopped = { reason, killed: run.job.kill('SIGTERM') }
    run.stopped.killed.catch(() => undefined)
    onStop()
  }
  const collect = (into: Buffer[]) => (chunk: Buffer) => {
    if (run.stopped || run.requested) return
    bytes += chunk.length
    if (bytes > state.maxExecOutputBytes) return stopWith('limit')
    into.push(chunk)
  }
  const job = await start(state, 'exec', command, options, stdin !== undefined, { stdout: collect(stdout), stderr: collect(stderr), end: () => undefined })
  run.job = job
  if (run.requested) stopWith(run.requested)
  if (stdin !== undefined) job.stream.stdin.end(stdin)
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => stopWith('timeout'), timeoutMs)
  const onAbort = () => stopWith('abort')
  signal?.addEventListener('abort', onAbort, { once: true })
  if (signal?.aborted) onAbort()
  try {
    const exit = await Promise.race([job.exit, stop])
    if (run.stopped) {
      await run.stopped.killed
      throw stoppedError(run.stopped.reason, command, state, timeoutMs, signal)
    }
    await job.started // a refused cwd rejects here
    if (job.stream.truncated()) throw operationError('exec-failed', `The output of ${JSON.stringify(command)} was cut off (the connection to the engine ended mid-frame). Run it again.`)
    return { exitCode: exit!.exitCode, stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8') }
  } catch (error) {
    throw engineError('exec-failed', 'process.exec', error, { endpoint: state.endpoint, id: state.id })
  } finally {
    clearTimeout(timer)
    signal?.removeEventListener('abort', onAbort)
  }
}

/** Besides a timeout and an abort, Docker's exec stops a command whose output passed the limit while it streams. */
type StopReason = ExecStopReason | 'limit'

function stoppedError(reason: StopReason, command: string, state: SandboxState, timeoutMs: number | undefined, signal: AbortSignal | undefined) {
  if (reason !== 'limit') return execStoppedError(PROVIDER_NAME, reason, command, timeoutMs, signal)
  return new SandboxLimitError('exec-output-too-large', {
    limitBytes: state.maxExecOutputBytes,
    option: 'dockerSandbox({ maxExecOutputBytes })',
    provider: PROVIDER_NAME,
    message:
      `Command printed more than ${state.maxExecOutputBytes} bytes (stdout and stderr together), so exec stopped it and killed its process group: ${JSON.stringify(command)}. ` +
      'Redirect the output to a file and read it with fs.readBytes, stream it with process.spawn, or raise dockerSandbox({ maxExecOutputBytes }).',
  })
}

async function spawnProcess(state: SandboxState, command: string, options: ProcessOptions): Promise<SpawnedProcess> {
  const stdout = new TextStream()
  const stderr = new TextStream()
  const job = await start(state, 'spawn', command, options, true, {
    stdout: (bytes) => stdout.push(bytes),
    stderr: (bytes) => stderr.push(bytes),
    end: () => {
      stdout.end()
      stderr.end()
    },
  })
  let pid: number
  try {
    pid = await job.started
  } catch (error) {
    job.stream.close()
    throw error
  }
  // Backpressure, once the wrapper's header is through: unread output pauses the connection.
  throttle([stdout, stderr], job.stream)
  const socket = job.stream.stdin

  return {
    pid,
    stdout,
    stderr,
    stdin: {
      write: (data) =>
        new Promise<void>((resolve, reject) => {
          if (socket.writableEnded || socket.destroyed) {
            reject(operationError('exec-failed', `stdin of process ${pid} is closed; write before calling stdin.end().`))
            return
          }
          socket.write(typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength), (error) =>
            error ? reject(operationError('exec-failed', `Writing to stdin of process ${pid} failed: ${error.message}`, error)) : resolve(),
          )
        }),
      end: () =>
        new Promise<void>((resolve) => {
          if (socket.writableFinished || socket.destroyed) return resolve()
          socket.once('close', () => resolve())
          socket.once('finish', () => resolve())
          if (!socket.writableEnded) socket.end()
        }),
    },
    ...spawnControls({ exit: job.exit, signal: options.signal, kill: (killSignal) => job.kill(killSignal) }),
  }
}

/** Validate, map the cwd, merge the environment and start the job. */
async function start(state: SandboxState, method: 'exec' | 'spawn', command: string, options: ProcessOptions, stdin: boolean, sinks: Parameters<typeof Job.start>[3]): Promise<Job> {
  state.assertLive(`process.${method}`)
  checkProcessCall(PROVIDER_NAME, method, command, options.signal)
  const callEnv = options.env === undefined ? {} : parseConfig(envVarsSchema, options.env, `${method}.env`)
  const cwd = toSandboxPath(options.cwd ?? '.', state.workspaceRoot)
  try {
    return await Job.start(
      { container: state.container, id: state.id, physicalRoot: state.physicalRoot, user: state.user, killGraceMs: state.killGraceMs, pidsLimit: state.pidsLimit },
      command,
      { cwd, env: envList({ ...state.env, ...callEnv }), stdin },
      sinks,
    )
  } catch (error) {
    throw engineError(method === 'exec' ? 'exec-failed' : 'spawn-failed', `process.${method}`, error, { endpoint: state.endpoint, id: state.id })
  }
}
