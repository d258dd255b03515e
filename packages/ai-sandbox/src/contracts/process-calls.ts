/**
 * The provider side of the process contract (process.ts) that the container
 * providers (Docker, Daytona, Cloudflare) share: the checks of an `exec` or
 * `spawn` call, the stopper that ends an `exec` on its timeout or abort, and
 * the `wait`/`kill` of a spawned process. It starts and kills nothing itself:
 * every stop goes through the kill the provider passes in (its job's group
 * kill). Invariant: the same call gets the same error, reason and message
 * from every provider. Exported through `@tanstack/ai-sandbox/internal` only.
 */
import { SandboxConfigError, SandboxOperationError } from './errors.js'
import type { ExecOptions, ProcessExit, SpawnedProcess } from './process.js'

/** A signal `SpawnedProcess.kill` takes. */
type KillSignal = NonNullable<Parameters<SpawnedProcess['kill']>[0]>

const KILL_SIGNALS: readonly string[] = ['SIGTERM', 'SIGKILL', 'SIGINT']

/** Why an `exec` was stopped before its command ended by itself. */
export type ExecStopReason = 'timeout' | 'abort'

/**
 * Check the options only `exec` takes.
 * @param options - the caller's exec options.
 * @param check - `stringStdin`: also require `stdin` to be a string (a provider that writes stdin as text).
 * @throws SandboxConfigError `exec.timeoutMs` unless it is a positive finite number, `exec.stdin` when `stringStdin` and it is not a string.
 */
export function checkExecOptions(options: ExecOptions, check: { readonly stringStdin: boolean }): void {
  const { timeoutMs } = options
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new SandboxConfigError('exec.timeoutMs', `Invalid option exec.timeoutMs: expected a positive number of milliseconds, got ${typeof timeoutMs === 'string' ? JSON.stringify(timeoutMs) : String(timeoutMs)}.`)
  }
  if (check.stringStdin && options.stdin !== undefined && typeof options.stdin !== 'string') {
    throw new SandboxConfigError('exec.stdin', 'Invalid option exec.stdin: expected a string.')
  }
}

/**
 * Check what every `exec` and `spawn` needs before anything starts: a command, and a signal not yet aborted.
 * @param provider - the provider's name, for the error.
 * @param method - `exec` or `spawn`, for the field and the message.
 * @param command - the caller's shell command.
 * @param signal - the caller's AbortSignal, if any.
 * @throws SandboxConfigError `<method>.command` for an empty or non-string command.
 * @throws SandboxOperationError `aborted` (cause: the signal's reason) when `signal` is already aborted.
 */
export function checkProcessCall(provider: string, method: 'exec' | 'spawn', command: string, signal: AbortSignal | undefined): void {
  if (typeof command !== 'string' || command.trim() === '') {
    throw new SandboxConfigError(`${method}.command`, `Invalid option ${method}.command: expected a non-empty shell command string.`)
  }
  if (signal?.aborted) {
    throw operationError(provider, 'aborted', `process.${method} was not started: the AbortSignal is already aborted.`, signal.reason)
  }
}

/**
 * The error of an `exec` that was stopped, once its process group was killed.
 * @param provider - the provider's name.
 * @param reason - `timeout` (after `timeoutMs`) or `abort` (the caller's signal).
 * @param command - the command, quoted in the message.
 * @param timeoutMs - the exec's timeout, named in the `timeout` message.
 * @param signal - the caller's signal; its `reason` becomes the `aborted` error's cause.
 * @returns a `SandboxOperationError` with reason `timeout` or `aborted`.
 */
export function execStoppedError(provider: string, reason: ExecStopReason, command: string, timeoutMs: number | undefined, signal: AbortSignal | undefined): SandboxOperationError {
  if (reason === 'timeout') {
    return operationError(provider, 'timeout', `Command timed out after ${timeoutMs} ms and its process group was killed: ${JSON.stringify(command)}. Raise timeoutMs or run it with process.spawn.`)
  }
  return operationError(provider, 'aborted', `Command aborted by the caller's AbortSignal; its process group was killed: ${JSON.stringify(command)}.`, signal?.reason)
}

/** What {@link watchExecStop} returns. */
export interface ExecStopper {
  /**
   * Call once the command's run returned. Resolves when no stop came;
   * otherwise waits for the kill and rejects with {@link execStoppedError}
   * (or with the kill's own error when the kill failed).
   */
  readonly throwIfStopped: () => Promise<void>
  /** Clear the timer and the abort listener; call in a `finally`. */
  readonly dispose: () => void
}

/**
 * Arm the stops of one `exec`: after `timeoutMs`, or when `signal` aborts,
 * `kill` is called once (the first stop wins; its failure is kept for
 * {@link ExecStopper.throwIfStopped}, never left unhandled).
 * @param options - `provider` and `command` for the error, the caller's `timeoutMs` and `signal`, and `kill`, which stops the job's whole process group (SIGTERM, then SIGKILL after the grace).
 * @returns the stopper; the caller checks it after the run and disposes it in a `finally`.
 */
export function watchExecStop(options: {
  readonly provider: string
  readonly command: string
  readonly timeoutMs: number | undefined
  readonly signal: AbortSignal | undefined
  readonly kill: () => Promise<void>
}): ExecStopper {
  const { provider, command, timeoutMs, signal, kill } = options
  let stopped: { reason: ExecStopReason; killed: Promise<void> } | undefined
  const stop = (reason: ExecStopReason) => {
    if (stopped) return
    stopped = { reason, killed: kill() }
    stopped.killed.catch(() => undefined)
  }
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => stop('timeout'), timeoutMs)
  const onAbort = () => stop('abort')
  signal?.addEventListener('abort', onAbort, { once: true })
  return {
    throwIfStopped: async () => {
      if (!stopped) return
      await stopped.killed
      throw execStoppedError(provider, stopped.reason, command, timeoutMs, signal)
    },
    dispose: () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
    },
  }
}

/**
 * The `wait` and `kill` of a spawned process, and its abort wiring: when
 * `signal` aborts (or already has), `kill('SIGTERM')` runs, and `wait()` then
 * rejects with that kill's error instead of waiting forever on processes a
 * failed kill left. The abort listener goes once the process has exited.
 * @param options - `exit`: settles when the process has exited; `signal`: the caller's AbortSignal; `kill`: the provider's group kill.
 * @returns `wait` and `kill` for the `SpawnedProcess`. `kill` rejects with `SandboxConfigError` `kill.signal` for a signal other than SIGTERM, SIGKILL or SIGINT.
 */
export function spawnControls(options: {
  readonly exit: Promise<ProcessExit>
  readonly signal: AbortSignal | undefined
  readonly kill: (signal: KillSignal) => Promise<void>
}): Pick<SpawnedProcess, 'wait' | 'kill'> {
  const { exit, signal, kill } = options
  let abortKill: Promise<void> | undefined
  const onAbort = () => {
    abortKill = kill('SIGTERM')
    // Reported through wait(); never left unhandled.
    abortKill.catch(() => undefined)
  }
  signal?.addEventListener('abort', onAbort, { once: true })
  if (signal?.aborted) onAbort()
  void exit.finally(() => signal?.removeEventListener('abort', onAbort)).catch(() => undefined)
  return {
    wait: async () => {
      if (!abortKill) return exit
      // A failed abort-kill leaves live processes; surface it instead of waiting forever.
      await Promise.race([exit, abortKill])
      return exit
    },
    kill: (killSignal: KillSignal = 'SIGTERM') => {
      if (!KILL_SIGNALS.includes(killSignal)) {
        return Promise.reject(new SandboxConfigError('kill.signal', `Invalid option kill.signal: expected one of ${KILL_SIGNALS.join(', ')}, got ${JSON.stringify(killSignal)}.`))
      }
      return kill(killSignal)
    },
  }
}

function operationError(provider: string, reason: 'aborted' | 'timeout', message: string, cause?: unknown): SandboxOperationError {
  return new SandboxOperationError(reason, provider, message, cause === undefined ? undefined : { cause })
}
