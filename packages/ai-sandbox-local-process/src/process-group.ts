/**
 * One job on the host: `/bin/sh -c command` started detached as the leader of
 * a new process group, every process of it marked with the job's and the
 * sandbox's ids. Owns signalling the job (TERM, then KILL) and the check that
 * nothing is left; it never signals a group it has seen gone. Invariants: `exit`
 * settles once the shell exits; `kill()` resolves only when nothing is left.
 * Design notes: docs/design/local-process.md
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { constants } from 'node:os'
import { SANDBOX_ID_ENV, SANDBOX_JOB_ENV } from '@tanstack/ai-sandbox/internal'
import type { ProcessExit } from '@tanstack/ai-sandbox'
import { errnoCode, operationError } from './errors.js'
import { scanJob, signalJobProcess } from './job-tree.js'
import { TextStream } from './text-stream.js'

/** Signals `kill()` accepts (the contract's set). */
export type KillSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT'

/** How long a group may survive SIGKILL before `kill()` gives up, in ms. */
const SIGKILL_DEADLINE_MS = 30_000

/**
 * How long the output pipes are still read after the shell (the direct child)
 * exited, in ms, when something else still holds their write ends (a
 * background child: `sleep 300 &`, a dev server). Then they are closed from
 * our side, so `exit` resolves and the streams end; what that child writes
 * later is cut off (its next write to the closed pipe gets SIGPIPE or EPIPE).
 * Output the shell itself wrote before exiting is already in the pipe and is
 * read in full. Pipes that reach EOF sooner are not held back by it.
 */
export const OUTPUT_DRAIN_MS = 200

/** Options of {@link startProcessGroup}. */
export interface ProcessGroupOptions {
  /** Host working directory (already confined). */
  cwd: string
  /** Complete environment of the child; the job and sandbox markers are added over it. */
  env: Record<string, string | undefined>
  /** The sandbox's id: the value of its marker entry `TANSTACK_SANDBOX_ID`. */
  sandboxId: string
  /** ms between the first signal and SIGKILL. */
  graceMs: number
  /** Called once, with the group, when it is known to be gone (may come before the start resolved). */
  onGone: (group: ProcessGroup) => void
}

/** A started job: its pipes, its exit and a group-wide kill. */
export class ProcessGroup {
  /** The process-group id (the leader's pid). */
  readonly pgid: number
  /** The job's marker entry, `TANSTACK_SANDBOX_JOB=<id>`, inherited by everything it starts. */
  readonly marker: string
  readonly stdout = new TextStream()
  readonly stderr = new TextStream()
  /**
   * Resolves when the leader exited and both output pipes closed: at EOF, or
   * closed from our side {@link OUTPUT_DRAIN_MS} after the leader's exit (or
   * after a kill) when a background process still holds them.
   */
  readonly exit: Promise<ProcessExit>
  /** Resolves when the leader (the shell) exited, whatever still holds its pipes. */
  private readonly leaderExit: Promise<void>
  /** The group was seen empty: its pgid is never signalled again (it may be reused). */
  private gone = false
  private killing: Promise<void> | undefined
  /** The job's processes as last scanned (Linux), kept so descendants reparented away are still found. */
  private tracked: Map<number, string> = new Map()

  constructor(
    readonly child: ChildProcessWithoutNullStreams,
    private readonly options: ProcessGroupOptions,
    marker: string,
  ) {
    this.pgid = child.pid!
    this.marker = marker
    // Each pipe pauses while its stream holds more than the high-water mark unread (backpressure).
    this.stdout.readFrom(child.stdout)
    this.stderr.readFrom(child.stderr)
    // EPIPE after the child closed its stdin is reported by stdin.write/end callers.
    child.stdin.on('error', () => undefined)
    // A background child may hold the pipes open for good: read them for the drain window, then
    // close them. Armed synchronously on 'exit', so the usual 'close' right after clears it.
    let drain: ReturnType<typeof setTimeout> | undefined
    this.leaderExit = new Promise((resolve) =>
      child.once('exit', () => {
        drain = setTimeout(() => void this.releaseOutput(), OUTPUT_DRAIN_MS)
        resolve()
      }),
    )
    this.exit = new Promise((resolve) => {
      child.once('close', (code, signal) => {
        clearTimeout(drain)
        this.stdout.end()
        this.stderr.end()
        resolve(toExit(code, signal))
        // groupIsAlive throws on an errno other than ESRCH/EPERM: the group is then taken as gone, not left to reject unhandled.
        this.settleAfterLeader().catch(() => this.markGone())
      })
    })
  }

  /**
   * Send `signal` to the whole job (the group, every process carrying the
   * job's marker and every descendant, collected before signalling), then
   * SIGKILL after the grace period, and resolve when nothing of it is left.
   * Safe to call repeatedly, also after the shell exited (a marked process it
   * left is still stopped): later calls send their signal too and share the
   * first call's wait. Once nothing of the job is left and the leader exited,
   * the output pipes are closed from our side, so `exit` resolves even when an
   * escaped process still holds their write ends.
   * @throws SandboxOperationError `timeout` when the job survives SIGKILL for 30 s.
   */
  kill(signal: KillSignal = 'SIGTERM'): Promise<void> {
    const sent = this.signal(signal)
    const killing = (this.killing ??= sent.then(() => this.escalate(signal)).then(() => this.releaseOutput()))
    // Reported through the returned promise; never left unhandled when `sent` fails first.
    killing.catch(() => undefined)
    return sent.then(() => killing)
  }

  private async escalate(first: KillSignal): Promise<void> {
    if (first !== 'SIGKILL' && (await this.waitGone(this.options.graceMs))) return
    await this.signal('SIGKILL')
    if (await this.waitGone(SIGKILL_DEADLINE_MS, 'SIGKILL')) return
    throw operationError('timeout', `Process group ${this.pgid} (or a process it started) still has live processes ${SIGKILL_DEADLINE_MS} ms after SIGKILL (stuck in uninterruptible I/O, or owned by another user?).`)
  }

  /**
   * After the drain window or a kill: wait for the leader's exit, give the
   * pipes one more poll (so bytes already in them are read even when the
   * event loop was late), then close both. Only a background or escaped
   * process can still hold them; its later output is dropped (`kill()` or
   * `destroy()` stops it).
   */
  private async releaseOutput(): Promise<void> {
    await this.leaderExit
    await new Promise((resolve) => setImmediate(resolve))
    this.child.stdout.destroy()
    this.child.stderr.destroy()
  }

  /** Collect the job (group members, marked processes, descendants), then signal the group (unless gone) and each collected process. */
  private async signal(signal: NodeJS.Signals): Promise<void> {
    this.tracked = await this.scan()
    if (!this.gone) {
      try {
        process.kill(-this.pgid, signal)
      } catch (error) {
        // ESRCH: no member left in the group; descendants and marked processes that left it may remain.
        if (errnoCode(error) !== 'ESRCH') throw operationError('exec-failed', `Could not send ${signal} to process group ${this.pgid}: ${String(error)}`, error)
      }
    }
    await Promise.all([...this.tracked].map(([pid, start]) => signalJobProcess(pid, start, signal)))
  }

  private scan(): Promise<Map<number, string>> {
    return scanJob({ pgid: this.gone ? undefined : this.pgid, marker: this.marker }, this.tracked)
  }

  /** True while a process of the job is alive (Linux: the scan; elsewhere: the group). */
  private async jobIsAlive(): Promise<boolean> {
    if (process.platform !== 'linux') return !this.gone && groupIsAlive(this.pgid)
    this.tracked = await this.scan()
    return this.tracked.size > 0
  }

  /**
   * Poll until the job is gone or `deadlineMs` passed; true when gone. With
   * `resend`, each round also sends it to what the scan found, so a process
   * started after the last signal (a respawning loop) is not spared.
   */
  private async waitGone(deadlineMs: number, resend?: NodeJS.Signals): Promise<boolean> {
    const deadline = Date.now() + deadlineMs
    let interval = 10
    for (;;) {
      if (!(await this.jobIsAlive())) {
        this.markGone()
        return true
      }
      if (Date.now() >= deadline) return false
      if (resend) await Promise.all([...this.tracked].map(([pid, start]) => signalJobProcess(pid, start, resend)))
      await new Promise((resolve) => setTimeout(resolve, Math.min(interval, Math.max(1, deadline - Date.now()))))
      interval = Math.min(interval * 2, 100)
    }
  }

  /** After the leader exits, background members may live on; check slowly until they are gone. */
  private async settleAfterLeader(): Promise<void> {
    while (!this.gone && !this.killing) {
      if (!(await groupIsAlive(this.pgid))) {
        this.markGone()
        return
      }
      await new Promise((resolve) => setTimeout(resolve, 1000).unref())
    }
  }

  private markGone(): void {
    if (this.gone) return
    this.gone = true
    this.options.onGone(this)
  }
}

/**
 * Start `/bin/sh -c command` as a new process-group leader.
 * @throws SandboxOperationError `spawn-failed` when the shell cannot start.
 */
export async function startProcessGroup(command: string, options: ProcessGroupOptions): Promise<ProcessGroup> {
  const jobId = randomUUID()
  const child = spawn('/bin/sh', ['-c', command], {
    cwd: options.cwd,
    // The markers go last, so a caller's env can never unset or fake them.
    env: { ...options.env, [SANDBOX_ID_ENV]: options.sandboxId, [SANDBOX_JOB_ENV]: jobId },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve)
      child.once('error', reject)
    })
  } catch (error) {
    throw operationError('spawn-failed', `Could not start /bin/sh for ${JSON.stringify(command)}: ${String(error)}`, error)
  }
  // Later child errors (a failed kill) surface through ProcessGroup.kill instead.
  child.on('error', () => undefined)
  return new ProcessGroup(child, options, `${SANDBOX_JOB_ENV}=${jobId}`)
}

/**
 * True while any process of group `pgid` is alive. Zombies do not count: an
 * orphan reparented to an init that never reaps (containers, microVMs) stays a
 * zombie in the group forever, yet holds no resources and runs no code.
 */
export async function groupIsAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    const code = errnoCode(error)
    if (code === 'ESRCH') return false
    if (code === 'EPERM') return true
    throw error
  }
  return process.platform === 'linux' ? hasLiveLinuxMember(pgid) : true
}

async function hasLiveLinuxMember(pgid: number): Promise<boolean> {
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue
    let stat: string
    try {
      stat = await readFile(`/proc/${name}/stat`, 'utf8')
    } catch {
      continue // the process exited between readdir and readFile: already gone
    }
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true
  }
  return false
}

function toExit(code: number | null, signal: NodeJS.Signals | null): ProcessExit {
  if (signal) return { exitCode: 128 + (constants.signals[signal] ?? 0), signal }
  return { exitCode: code ?? 0 }
}
