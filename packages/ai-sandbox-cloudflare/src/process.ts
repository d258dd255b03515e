/**
 * `handle.process` of the Cloudflare provider: `exec` and `spawn` over the
 * job wrapper (job.ts, follow.ts). Owns option checks, cwd mapping, timeouts,
 * abort wiring and the exec output bound. Every stop (timeout, abort,
 * `kill()`) goes through the job's group kill from another session, then the
 * SDK's `killProcess` as a second net; never the SDK's `timeout` or an
 * AbortSignal, which stop nothing inside the container. stdin of a spawned
 * process is not writable: the SDK has no stdin route.
 */
import type { ExecOptions, ExecResult, ProcessExit, ProcessOptions, SandboxProcess, SpawnedProcess } from '@tanstack/ai-sandbox'
import { SandboxLimitError, toSandboxPath, UnsupportedCapabilityError } from '@tanstack/ai-sandbox'
import { checkExecOptions, checkProcessCall, envVarsSchema, spawnControls, watchExecStop } from '@tanstack/ai-sandbox/internal'
import { operationError, parseConfig, PROVIDER_NAME } from './errors.js'
import { follow } from './follow.js'
import { exitOf, fromBase64, jobArgs, killJob, newJobId, refusalOf, runWrapped, writeJobFiles } from './job.js'
import type { JobInput, KillSignal } from './job.js'
import { runCommand } from './sandbox-files.js'
import type { SandboxState } from './state.js'
import { TextChunks } from './text-chunks.js'

/** How long `kill()` waits for the wrapper's exit line before it also asks the control server to kill the process, ms. */
const SECOND_NET_AFTER_MS = 2000

/** Build the `process` member of a handle over one sandbox's state. */
export function createCloudflareProcess(state: SandboxState): SandboxProcess {
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
    await writeJobFiles(state, id, input, 'process.exec')
    const result = await runWrapped(state, id, 'job', jobArgs(state, input), 'process.exec')
    await stopper.throwIfStopped()
    const refused = refusalOf(result.status, input.cwd)
    if (refused) throw refused
    if (result.tooLarge) throw outputTooLarge(state, command)
    const decoder = new TextDecoder()
    return { exitCode: result.exitCode, stdout: decoder.decode(result.stdout), stderr: decoder.decode(result.stderr) }
  } finally {
    stopper.dispose()
  }
}

function outputTooLarge(state: SandboxState, command: string): SandboxLimitError<'exec-output-too-large'> {
  const limit = state.config.maxExecOutputBytes
  return new SandboxLimitError('exec-output-too-large', {
    limitBytes: limit,
    option: 'cloudflareSandbox({ maxExecOutputBytes })',
    provider: PROVIDER_NAME,
    message:
      `Command printed more than ${limit} bytes (stdout and stderr together): ${JSON.stringify(command)}. The output was kept in the container and not sent (Workers RPC caps one value at 32 MiB); the command ran to its end. ` +
      'Redirect the output to a file and read it with fs.readBytes, or stream it with process.spawn.',
  })
}

async function spawnProcess(state: SandboxState, command: string, options: ProcessOptions): Promise<SpawnedProcess> {
  const input = jobInput(state, 'spawn', command, options)
  const id = newJobId()
  const processId = `tanstack-${id}`
  const stdout = new TextChunks()
  const stderr = new TextChunks()
  let onStarted!: (pid: number) => void
  let onRefused!: (error: Error) => void
  const started = new Promise<number>((resolve, reject) => {
    onStarted = resolve
    onRefused = reject
  })
  started.catch(() => undefined)
  let exitCode: number | undefined
  let signalled = false
  await writeJobFiles(state, id, input, 'process.spawn')
  await state.toolbox.start(runCommand(state.paths, state.marker, id, 0, 'spawn', jobArgs(state, input)), processId, 'process.spawn')
  const exit: Promise<ProcessExit> = follow(state, processId, (line) => {
    const tag = line[0]
    if (tag === 'O') stdout.push(fromBase64(line.slice(1)))
    else if (tag === 'E') stderr.push(fromBase64(line.slice(1)))
    else if (tag === 'P') onStarted(Number(line.slice(2)) || 0)
    else if (tag === 'R') onRefused(refusalOf(line.slice(2), input.cwd) ?? operationError('spawn-failed', `process.spawn: the job script did not start ${JSON.stringify(command)} (${line.slice(2)}).`))
    else if (tag === 'X') {
      exitCode = Number(line.slice(2))
      return true
    }
    return false
  }).then(
    () => {
      stdout.end()
      stderr.end()
      onRefused(operationError('spawn-failed', `process.spawn: the job ended before it started ${JSON.stringify(command)}.`))
      return exitOf(exitCode ?? 1, signalled)
    },
    (error: unknown) => {
      const failure = error instanceof Error ? error : new Error(String(error))
      stdout.fail(failure)
      stderr.fail(failure)
      onRefused(failure)
      throw failure
    },
  )
  exit.catch(() => undefined)
  const pid = await started
  const kill = async (killSignal: KillSignal) => {
    signalled = true
    // A destroyed sandbox has nothing left to kill, and any call would start its container again.
    if (state.destroyed) return
    await killJob(state, id, killSignal)
    // Second net: the control server's own kill of the wrapper, once the wrapper had time to send the rest.
    for (let waited = 0; exitCode === undefined && waited < SECOND_NET_AFTER_MS; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50))
    if (exitCode === undefined && !state.destroyed) await state.toolbox.killProcess(processId)
  }
  const noStdin = () =>
    Promise.reject(
      new UnsupportedCapabilityError({
        provider: PROVIDER_NAME,
        capability: 'writableStdin',
        method: 'stdin.write',
        hint: '@cloudflare/sandbox has no way to write to a running process. Write the input to a file (fs.write) and redirect it: spawn("cmd < file"), or pass exec({ stdin }).',
      }),
    )
  return {
    pid: pid > 0 ? pid : undefined,
    stdout,
    stderr,
    stdin: { write: noStdin, end: async () => undefined },
    ...spawnControls({ exit, signal: options.signal, kill }),
  }
}

/** Validate the command and options, map the cwd. */
function jobInput(state: SandboxState, method: 'exec' | 'spawn', command: string, options: ExecOptions): JobInput {
  state.assertLive(`process.${method}`)
  checkProcessCall(PROVIDER_NAME, method, command, options.signal)
  const env = options.env === undefined ? {} : parseConfig(envVarsSchema, options.env, `${method}.env`)
  const cwd = toSandboxPath(options.cwd ?? '.', state.workspaceRoot)
  return { command, cwd, env, ...(options.stdin !== undefined ? { stdin: options.stdin } : {}) }
}
