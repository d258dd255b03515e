/**
 * A job: one user command run by `docker exec` as the leader of its own
 * process group, marked `TANSTACK_SANDBOX_JOB=<random id>` in its environment;
 * `kill` returns only once no process of the job is left. Invariant: the
 * wrapper's header line is stderr's first line, stripped before callers see it.
 * One file: the wrapper scripts, `Job` and header parsing share one protocol.
 * Design notes: docs/design/docker.md
 */
import type Docker from 'dockerode'
import { SandboxPathError } from '@tanstack/ai-sandbox'
import type { ProcessExit } from '@tanstack/ai-sandbox'
import { randomUUID } from 'node:crypto'
import { constants } from 'node:os'
import { GROUP_KILLER, JOB_SCAN_AWK, SANDBOX_JOB_ENV } from '@tanstack/ai-sandbox/internal'
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

/** Runs as `sh -c FORKLESS killer <pgid> <signal>`: signals the group with the builtin `kill` only. */
const FORKLESS_KILLER = 'kill -"$2" -"$1" 2>/dev/null; exit 0'

/** What a shell prints when it cannot fork, or the engine when it cannot start the kill's exec (the container's pids limit is reached). */
const FORK_FAILED = /can't fork|cannot fork|resource temporarily unavailable|OCI runtime exec failed/i

/** Where a job runs. */
export interface JobTarget {
  container: Docker.Container
  id: string
  /** Physical workspace root inside the container (symlinks resolved). */
  physicalRoot: string
  /** User the job runs as; `undefined` = the container's user. */
  user: string | undefined
  killGraceMs: number
  /** `resources.pids` of the sandbox, named when a job cannot start. */
  pidsLimit?: number | undefined
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
  /** The job's marker entry, `TANSTACK_SANDBOX_JOB=<id>`, inherited by everything it starts. */
  readonly marker: string
  private killing: Promise<void> | undefined
  private signalled: KillSignal | undefined
  private exited = false

  private constructor(
    private readonly target: JobTarget,
    readonly stream: RunningExec,
    started: Promise<number>,
    private readonly cwd: string,
    marker: string,
  ) {
    this.marker = marker
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
    const early = new EarlyOutput()
    const header = new HeaderSplitter((line) => {
      early.stop()
      const pgid = /^pgid=(\d+)$/.exec(line)
      if (pgid) return onHeader(Number(pgid[1]))
      onRefused(
        line === 'cwd-escape'
          ? new SandboxPathError('symlink-escape', options.cwd, `Working directory ${JSON.stringify(options.cwd)} resolves (through a symlink) outside the sandbox workspace. Use a directory inside it.`)
          : new SandboxPathError('not-found', options.cwd, `Working directory ${JSON.stringify(options.cwd)} does not exist in the sandbox workspace, is not a directory, or the sandbox user cannot enter it. Create it with fs.mkdir first.`),
      )
    }, sinks.stderr)
    const marker = `${SANDBOX_JOB_ENV}=${randomUUID()}`
    // The marker goes last and replaces any caller entry of that name, so it can be neither unset nor faked.
    const env = [...options.env.filter((entry) => !entry.startsWith(`${SANDBOX_JOB_ENV}=`)), marker]
    const stream = await startExec(
      target.container,
      { cmd: ['/bin/sh', '-c', JOB_WRAPPER, JOB_WRAPPER, target.physicalRoot, options.cwd, command], user: target.user, env, stdin: options.stdin },
      {
        stdout: (bytes) => {
          early.push(bytes)
          sinks.stdout(bytes)
        },
        stderr: (bytes) => {
          early.push(bytes)
          header.push(bytes)
        },
      },
    )
    void stream.exit.then(
      () => {
        header.flush()
        sinks.end()
        onRefused(operationError('spawn-failed', wrapperEndedMessage(command, early.text(), target.pidsLimit)))
      },
      (error: unknown) => onRefused(operationError('spawn-failed', `Lost the exec of ${JSON.stringify(command)}: ${String(error)}`, error)),
    )
    return new Job(target, stream, started, options.cwd, marker)
  }

  /**
   * Signal the whole job (group, marked processes, descendants), escalate to
   * SIGKILL after the grace period, and resolve when none of them is left,
   * then drop the connection (the exit code still comes from the engine).
   * Safe to call repeatedly and after exit (a marked process the shell left
   * behind is still stopped).
   * @throws SandboxOperationError `timeout` when members survive SIGKILL.
   */
  kill(signal: KillSignal = 'SIGTERM'): Promise<void> {
    // Without the close, `exit` waits for the engine to end the output, which an escaped
    // process holding it delays (by the engine's own I/O grace, or for good).
    this.killing ??= this.killGroup(signal).then(() => this.stream.close())
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
    const grace = String(Math.ceil(this.target.killGraceMs / 50))
    let result = await this.runKiller(pgid, GROUP_KILLER, [signal.slice(3), grace, JOB_SCAN_AWK, this.marker])
    // Out of processes (pids limit): the scan cannot fork and the shell gives up. Signal the
    // group with the builtin `kill` (no fork), TERM-like first, then KILL, and scan again.
    for (const forkless of [signal.slice(3), 'KILL']) {
      if (!result || !FORK_FAILED.test(result.output)) break
      await this.runKiller(pgid, FORKLESS_KILLER, [forkless])
      await new Promise((resolve) => setTimeout(resolve, this.target.killGraceMs))
      result = await this.runKiller(pgid, GROUP_KILLER, ['KILL', grace, JOB_SCAN_AWK, this.marker])
    }
    if (!result || result.code === 0) return
    throw operationError(
      'timeout',
      `Process group ${pgid} (or a process it started) still has live processes 30 s after SIGKILL (stuck in uninterruptible I/O, owned by another user, or the sandbox is out of processes); ${result.output || `exit ${result.code}`}`,
    )
  }

  /** Run a kill script from a second exec; `undefined` when the container (and so the job) is gone. */
  private async runKiller(pgid: number, script: string, args: string[]): Promise<{ code: number; output: string } | undefined> {
    const output: Buffer[] = []
    let running: RunningExec
    try {
      running = await startExec(
        this.target.container,
        { cmd: ['/bin/sh', '-c', script, 'tanstack-sandbox-kill', String(pgid), ...args], user: this.target.user },
        { stdout: (bytes) => output.push(bytes), stderr: (bytes) => output.push(bytes) },
      )
    } catch (error) {
      // The container is gone or stopped: every process of the job died with it.
      if (isMissingContainer(error) || statusOf(error) === 409) return undefined
      throw operationError('exec-failed', `Could not start the kill of process group ${pgid} in sandbox ${this.target.id}: ${String(error)}`, error)
    }
    const code = await running.exit
    return code === null ? undefined : { code, output: Buffer.concat(output).toString().trim() }
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
 * The message of a job whose wrapper ended before its header, quoting what the
 * engine or the shell said and naming the likely cause: a failed fork (the pids
 * limit) or an image without /bin/sh or /proc.
 * @param command - The user command that did not start.
 * @param said - The exec's output before the header (engine refusal or shell error), `''` for none.
 * @param pidsLimit - `resources.pids` of the sandbox, named in the hint; `undefined` when unlimited.
 * @returns One line: what ended, what was said, and the fix.
 * @example wrapperEndedMessage('echo hi', 'OCI runtime exec failed: ...', 32)
 */
export function wrapperEndedMessage(command: string, said: string, pidsLimit: number | undefined): string {
  // ash prefixes its errors with $0, which is the whole wrapper script here.
  const output = said.replaceAll(JOB_WRAPPER, 'sh')
  return `The job wrapper ended before starting ${JSON.stringify(command)}: ${output || 'no output'}. ${wrapperEndedHint(output, pidsLimit)}`
}

/** Why a wrapper may end before its header, given what it said. */
function wrapperEndedHint(output: string, pidsLimit: number | undefined): string {
  const forkFailed = /fork|resource temporarily unavailable/i.test(output)
  const limit = pidsLimit === undefined ? '' : ` of ${pidsLimit} (dockerSandbox({ resources: { pids } }))`
  if (forkFailed) return `A fork failed: the sandbox is out of processes (the pids limit${limit} is reached). Stop some of its processes (kill a spawned job) or raise the limit.`
  if (pidsLimit !== undefined) return `The sandbox may be out of processes (its pids limit${limit} reached, so the engine could not start the exec); stop some of its processes or raise the limit. Otherwise the image needs /bin/sh and /proc.`
  return 'The image needs /bin/sh and /proc.'
}

/** How much of the output before the header an error message quotes. */
const EARLY_OUTPUT_BYTES = 512

/**
 * What the exec wrote on either stream before the wrapper's header: when no
 * header ever comes, that is the engine's refusal (it writes it to stdout) or
 * the shell's own error, so the spawn-failed message can quote it.
 */
class EarlyOutput {
  private chunks: Buffer[] | undefined = []
  private bytes = 0

  push(bytes: Buffer): void {
    if (this.chunks === undefined || this.bytes >= EARLY_OUTPUT_BYTES) return
    this.chunks.push(bytes)
    this.bytes += bytes.length
  }

  /** The header came: nothing later is the wrapper's failure. */
  stop(): void {
    this.chunks = undefined
  }

  text(): string {
    return Buffer.concat(this.chunks ?? []).subarray(0, EARLY_OUTPUT_BYTES).toString().trim()
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

  /** The output ended without a header: pass on what was held back. */
  flush(): void {
    const held = this.pending
    if (held === undefined) return
    this.pending = undefined
    if (held.length > 0) this.forward(held)
  }
}
