/**
 * The process contract of a sandbox handle: `exec` to completion and a duplex
 * `spawn` of POSIX shell strings (`sh -c`). Invariant: `exec` and `wait()`
 * settle when that shell exits and its output is drained; memory is bounded
 * (`maxExecOutputBytes`, spawn backpressure, see {@link SpawnedProcess.stdout}).
 * Design notes: docs/design/contracts.md
 */

/** Options shared by {@link SandboxProcess.exec} and {@link SandboxProcess.spawn}. */
export interface ProcessOptions {
  /** Working directory inside the sandbox. Default: the workspace root. */
  cwd?: string
  /** Extra environment variables, merged over the sandbox environment. */
  env?: Record<string, string>
  /** Aborting kills the process (its whole group where the provider can). */
  signal?: AbortSignal
}

/** Options of {@link SandboxProcess.exec}. */
export interface ExecOptions extends ProcessOptions {
  /** Text written to stdin, then stdin is closed. Default: stdin is empty. */
  stdin?: string
  /** Kill the process after this many ms and reject with reason `timeout`. Default: no limit. */
  timeoutMs?: number
}

/** The outcome of {@link SandboxProcess.exec}. A non-zero exit is a result, not an error. */
export interface ExecResult {
  /** Exit code; 128+N when the process died of signal N. */
  readonly exitCode: number
  /** Everything written to stdout, UTF-8 decoded. */
  readonly stdout: string
  /** Everything written to stderr, UTF-8 decoded. */
  readonly stderr: string
}

/** How a spawned process ended. */
export interface ProcessExit {
  /** Exit code; 128+N when the process died of signal N. */
  readonly exitCode: number
  /** The signal name when the process was killed by one, e.g. `SIGTERM`. */
  readonly signal?: string
}

/** A process started with {@link SandboxProcess.spawn}. */
export interface SpawnedProcess {
  /** Provider-level process id (the process-group id on local-process), when known. */
  readonly pid?: number
  /**
   * stdout as UTF-8 text chunks, decoded so a character is never split across chunks.
   * Buffered until read, so a consumer that starts late loses nothing; but
   * once about 1 MiB (the provider's `OUTPUT_HIGH_WATER_MARK`) is unread, the
   * provider stops reading the pipe and the process blocks on its next write,
   * as with Node's `child_process`, until the consumer reads again. So a
   * process whose output nobody reads does not exit: read (or drain) both
   * streams, or `kill()` it. On Docker stdout and stderr share one
   * connection: a reader waiting on one stream keeps it flowing (the other
   * then buffers past the mark), so reading only one never deadlocks.
   */
  readonly stdout: AsyncIterable<string>
  /** stderr as UTF-8 text chunks, with the same backpressure as {@link SpawnedProcess.stdout}. */
  readonly stderr: AsyncIterable<string>
  /** Write to stdin (capability `writableStdin`). */
  readonly stdin: {
    write: (data: string | Uint8Array) => Promise<void>
    end: () => Promise<void>
  }
  /**
   * Resolves once the shell running the command has exited and its output is
   * drained, with that shell's exit. "Drained" means everything written to
   * stdout and stderr before the shell exited has been delivered and both
   * streams have ended. A background child the command started that still
   * holds the pipes (`sleep 300 &`, a dev server) does not keep it pending:
   * the provider reads for a short drain window after the exit (local-process
   * 200 ms; Docker the engine's, about 2 s), then ends the streams. That
   * child's later output is cut off (a write to the closed pipe may get
   * SIGPIPE or EPIPE); the child keeps running until {@link SpawnedProcess.kill} or the
   * sandbox's `destroy()`. A process blocked writing output nobody reads
   * (see {@link SpawnedProcess.stdout}) has not exited, so `wait()` stays
   * pending until its output is read or it is killed.
   */
  wait: () => Promise<ProcessExit>
  /**
   * Stop the process and everything it started (capability
   * `killableProcesses`): TERM, then KILL after a grace period. Resolves when
   * nothing of the job is left running (a zombie waiting for an init process
   * to reap it counts as gone). Safe to call more than once.
   */
  kill: (signal?: 'SIGTERM' | 'SIGKILL' | 'SIGINT') => Promise<void>
}

/** Runs commands inside the sandbox. */
export interface SandboxProcess {
  /**
   * Run a shell command to completion and collect its output. Resolves when
   * the shell exits and its output is drained, as {@link SpawnedProcess.wait}
   * describes: a background child that still holds stdout or stderr is read
   * only for the drain window, and is left running (it belongs to the
   * sandbox; `destroy()` stops it). A process meant to outlive the command
   * should redirect its output (`server >/tmp/server.log 2>&1 &`).
   * @throws SandboxLimitError `exec-output-too-large` when stdout plus stderr
   *   pass the provider's `maxExecOutputBytes` (default 64 MiB); the command's
   *   process group is killed first. Stream large output with `spawn`.
   */
  exec: (command: string, options?: ExecOptions) => Promise<ExecResult>
  /**
   * Start a shell command and return at once with streaming IO (capability
   * `backgroundProcesses`).
   *
   * Resolves once the process runs, not when it is merely accepted or queued:
   * by the time the promise settles the shell has been started in the
   * sandbox, so a later `exec` in the same sandbox sees it (in `/proc`, or by
   * its effects), and `kill()` and `destroy()` reach it. A provider whose
   * engine starts processes asynchronously (a remote API, `docker exec`)
   * waits for that start before resolving. Resolves without waiting for
   * the process to exit or to write anything.
   * @param command - A POSIX shell command, run with `sh -c`.
   * @param options - `cwd` (default the workspace root), extra `env`, and a `signal` that kills the process.
   * @returns The running process.
   * @throws SandboxOperationError `spawn-failed` when the process could not be started; `UnsupportedCapabilityError` when `backgroundProcesses` is false.
   */
  spawn: (command: string, options?: ProcessOptions) => Promise<SpawnedProcess>
}
