/**
 * The process contract of a sandbox handle: `exec` to completion and a duplex
 * `spawn`. Commands are POSIX shell strings run with `sh -c`; `cwd` is a path
 * inside the sandbox (the virtual `/workspace` is accepted everywhere).
 * Invariant: `exec` resolves only after stdout and stderr are fully drained.
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
  /** stdout as UTF-8 text chunks, decoded so a character is never split across chunks. */
  readonly stdout: AsyncIterable<string>
  /** stderr as UTF-8 text chunks. */
  readonly stderr: AsyncIterable<string>
  /** Write to stdin (capability `writableStdin`). */
  readonly stdin: {
    write: (data: string | Uint8Array) => Promise<void>
    end: () => Promise<void>
  }
  /** Resolves once the process has exited and its output is drained. */
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
  /** Run a shell command to completion and collect its output. */
  exec: (command: string, options?: ExecOptions) => Promise<ExecResult>
  /** Start a shell command and return at once with streaming IO (capability `backgroundProcesses`). */
  spawn: (command: string, options?: ProcessOptions) => Promise<SpawnedProcess>
}
