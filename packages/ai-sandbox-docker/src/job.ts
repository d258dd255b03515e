/**
 * A job: one user command run by `docker exec` as the leader of its own
 * process group, so everything it starts can be signalled at once. Destroying
 * an exec connection does not stop the process, so `kill` signals the group
 * from a second exec (TERM, then KILL after the grace period) and returns
 * only when no live member of the group is left, checked inside the container.
 * Invariant: the wrapper's one header line (the group id, or why the cwd was
 * refused) is the first line of stderr and is stripped before callers see it.
 */
import type Docker from 'dockerode'
import { SandboxPathError } from '@tanstack/ai-sandbox'
import type { ProcessExit } from '@tanstack/ai-sandbox'
import { constants } from 'node:os'
import { isMissingContainer, operationError, statusOf } from './errors.js'
import { startExec } from './exec-stream.js'
import type { RunningExec } from './exec-stream.js'

/** Signals `kill()` accepts (the contract's set). */
export type KillSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT'

/** Marks the wrapper's header line on stderr: \x01 never starts a real message. */
const HEADER_MARK = '\u0001tanstack-sandbox-job '

/**
 * Runs as `sh -c WRAPPER WRAPPER <physical workspace> <cwd> <command>`, with
 * the script itself as `$0` so it can re-run itself under `setsid`.
 * - runc makes every exec a session leader already; the `setsid` branch only
 *   runs on runtimes that do not, and never forks (we are not a leader there).
 * - `cd -P` plus the prefix check keeps the cwd inside the workspace even
 *   through symlinks.
 * - the header goes out before the command starts, so it is first on stderr.
 */
export const JOB_WRAPPER = [
  'read -r _ _ _ _ pg _ < /proc/$$/stat 2>/dev/null || pg=$$',
  'if [ "$pg" != "$$" ]; then exec setsid /bin/sh -c "$0" "$0" "$@"; fi',
  `if ! cd -P -- "$2" 2>/dev/null; then printf '\\001tanstack-sandbox-job cwd-missing\\n' >&2; exit 125; fi`,
  `case "$(pwd -P)/" in "$1"/*) ;; *) printf '\\001tanstack-sandbox-job cwd-escape\\n' >&2; exit 125 ;; esac`,
  `printf '\\001tanstack-sandbox-job pgid=%s\\n' "$$" >&2`,
  'exec /bin/sh -c "$3"',
].join('\n')

/**
 * Runs as `sh -c KILLER killer <pgid> <signal> <grace in 50 ms steps>`.
 * Exit 0: nothing of the group is left; 3: members survived SIGKILL for 30 s.
 * Membership is read from /proc/<pid>/stat (state and pgrp after the last ")");
 * zombies have exited and do not count.
 */
export const GROUP_KILLER = [
  'g=$1',
  'alive() { cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$g" \'{ sub(/^.*\\) /, ""); if ($3 == g && $1 != "Z" && $1 != "X") { n = 1; exit } } END { exit !n }\'; }',
  'settle() { i=0; while alive; do [ "$i" -ge "$1" ] && return 1; sleep 0.05; i=$((i + 1)); done; return 0; }',
  'alive || exit 0',
  'kill -"$2" -"$g" 2>/dev/null',
  'settle "$3" && exit 0',
  'kill -KILL -"$g" 2>/dev/null',
  'settle 600 && exit 0',
  'exit 3',
].join('\n')

/** Where a job runs. */
export interface JobTarget {
  container: Docker.Container
  id: string
  /** Physical workspace root inside the container (symlinks resolved). */
  physicalRoot: string
  /** User the job runs as; `undefined` = the container's user. */
  user: string | undefined
  killGraceMs: number
}

/** Receives the job's output. */
export interface JobSinks {
  stdout: (bytes: Buffer) => void
  stderr: (bytes: Buffer) => void
  /** Called once the output ended (before `exit` resolves). */
  end: () => void
}

/** A started job. */
export class Job {
  /** Resolves with the process-group id once the wrapper reported it; rejects when the cwd was refused. */
  readonly started: Promise<number>
  /** Resolves when the job's output ended, with its exit. */
  readonly exit: Promise<ProcessExit>
  private killing: Promise<void> | undefined
  private signalled: KillSignal | undefined
  private exited = false

  private constructor(
    private readonly target: JobTarget,
    readonly stream: RunningExec,
    started: Promise<number>,
    private readonly cwd: string,
  ) {
    this.started = started
    this.exit = stream.exit.then((code) => {
      this.exited = true
      return this.toExit(code)
    })
    // Observed by callers; never left unhandled.
    this.started.catch(() => undefined)
    this.exit.catch(() => undefined)
  }

  /**
   * Start `command` through the wrapper.
   * @param cwd - Absolute lexical cwd inside the workspace (confined by the wrapper).
   */
  static async start(target: JobTarget, command: string, options: { cwd: string; env: string[]; stdin: boolean }, sinks: JobSinks): Promise<Job> {
    let onHeader!: (pgid: number) => void
    let onRefused!: (error: Error) => void
    const started = new Promise<number>((resolve, reject) => {
      onHeader = resolve
      onRefused = reject
    })
    const header = new HeaderSplitter((line) => {
      const pgid = /^pgid=(\d+)$/.exec(line)
      if (pgid) return onHeader(Number(pgid[1]))
      onRefused(
        line === 'cwd-escape'
          ? new SandboxPathError('symlink-escape', options.cwd, `Working directory ${JSON.stringify(options.cwd)} resolves (through a symlink) outside the sandbox workspace. Use a directory inside it.`)
          : new SandboxPathError('not-found', options.cwd, `Working directory ${JSON.stringify(options.cwd)} does not exist in the sandbox workspace, is not a directory, or the sandbox user cannot enter it. Create it with fs.mkdir first.`),
      )
    }, sinks.stderr)
    const stream = await startExec(
      target.container,
      { cmd: ['/bin/sh', '-c', JOB_WRAPPER, JOB_WRAPPER, target.physicalRoot, options.cwd, command], user: target.user, env: options.env, stdin: options.stdin },
      { stdout: sinks.stdout, stderr: (bytes) => header.push(bytes) },
    )
    void stream.exit.then(
      () => {
        const leftover = header.leftover()
        header.flush()
        sinks.end()
        onRefused(operationError('spawn-failed', `The job wrapper ended before starting ${JSON.stringify(command)}: ${leftover || 'no output'}. The image needs /bin/sh and /proc.`))
      },
      (error: unknown) => onRefused(operationError('spawn-failed', `Lost the exec of ${JSON.stringify(command)}: ${String(error)}`, error)),
    )
    return new Job(target, stream, started, options.cwd)
  }

  /**
   * Signal the whole group, escalate to SIGKILL after the grace period, and
   * resolve when no live member is left. Safe to call repeatedly and after exit.
   * @throws SandboxOperationError `timeout` when members survive SIGKILL.
   */
  kill(signal: KillSignal = 'SIGTERM'): Promise<void> {
    this.killing ??= this.killGroup(signal)
    return this.killing
  }

  private async killGroup(signal: KillSignal): Promise<void> {
    let pgid: number
    try {
      pgid = await this.started
    } catch {
      return // the wrapper refused the cwd or never started: it started nothing
    }
    this.signalled = signal
    const output: Buffer[] = []
    let running: RunningExec
    try {
      running = await startExec(
        this.target.container,
        { cmd: ['/bin/sh', '-c', GROUP_KILLER, 'tanstack-sandbox-kill', String(pgid), signal.slice(3), String(Math.ceil(this.target.killGraceMs / 50))], user: this.target.user },
        { stdout: (bytes) => output.push(bytes), stderr: (bytes) => output.push(bytes) },
      )
    } catch (error) {
      // The container is gone or stopped: every process of the job died with it.
      if (isMissingContainer(error) || statusOf(error) === 409) return
      throw operationError('exec-failed', `Could not start the kill of process group ${pgid} in sandbox ${this.target.id}: ${String(error)}`, error)
    }
    const code = await running.exit
    if (code === 0 || code === null) return
    throw operationError('timeout', `Process group ${pgid} still has live processes 30 s after SIGKILL (stuck in uninterruptible I/O, or owned by another user): ${Buffer.concat(output).toString().trim()}`)
  }

  private toExit(code: number | null): ProcessExit {
    // No code: the container went away under the job, which died with it.
    if (code === null) return { exitCode: 128 + constants.signals.SIGKILL, signal: 'SIGKILL' }
    if (this.signalled && code > 128) {
      const name = Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0]
      if (name) return { exitCode: code, signal: name }
    }
    return { exitCode: code }
  }
}

/**
 * Strips the wrapper's header line from the front of stderr and passes every
 * later byte through untouched.
 */
class HeaderSplitter {
  private pending: Buffer | undefined = Buffer.alloc(0)

  constructor(
    private readonly onHeader: (line: string) => void,
    private readonly forward: (bytes: Buffer) => void,
  ) {}

  push(bytes: Buffer): void {
    if (this.pending === undefined) return this.forward(bytes)
    const joined = this.pending.length === 0 ? bytes : Buffer.concat([this.pending, bytes])
    const newline = joined.indexOf(0x0a)
    if (newline === -1 && joined.length < 256) {
      this.pending = joined
      return
    }
    this.pending = undefined
    const line = joined.subarray(0, newline === -1 ? 0 : newline).toString()
    if (newline !== -1 && line.startsWith(HEADER_MARK)) {
      this.onHeader(line.slice(HEADER_MARK.length))
      if (joined.length > newline + 1) this.forward(joined.subarray(newline + 1))
      return
    }
    this.forward(joined) // not ours (the shell failed before the wrapper ran): keep it all
  }

  /** Whatever was held back while waiting for the header, as text. */
  leftover(): string {
    return this.pending?.toString().trim() ?? ''
  }

  /** The output ended without a header: pass on what was held back. */
  flush(): void {
    const held = this.pending
    if (held === undefined) return
    this.pending = undefined
    if (held.length > 0) this.forward(held)
  }
}
