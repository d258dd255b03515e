/**
 * A job: one user command run through the job script in a Daytona session,
 * as the leader of its own process group, marked `TANSTACK_SANDBOX_JOB=<id>`.
 * `runJob` waits for its end in a pooled session (exec); `startJob` gives it
 * a session of its own and follows its logs (spawn), following again after a
 * dropped socket without losing or doubling output. `killJob` returns only
 * once no process of the job is left. Invariant: the header line is stripped
 * before callers see stderr. Design notes: docs/design/daytona.md (section 11)
 */
import { randomUUID } from 'node:crypto'
import { constants } from 'node:os'
import { SandboxError, SandboxPathError } from '@tanstack/ai-sandbox'
import type { ProcessExit } from '@tanstack/ai-sandbox'
import { callEnvFileText } from '@tanstack/ai-sandbox/internal'
import { setTimeout as pause } from 'node:timers/promises'
import { operationError } from './errors.js'
import { HEADER_MARK, jobCommand, killCommand } from './sandbox-files.js'
import type { SandboxState } from './state.js'
import type { CommandResult } from './toolbox.js'

/** Signals `kill()` accepts (the contract's set). */
export type KillSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT'

/** What a job needs besides its command. */
export interface JobInput {
  /** Absolute lexical cwd inside the workspace (the script confines it). */
  cwd: string
  /** Per-call variables (written to a file, never put in the command line). */
  env: Record<string, string>
  /** Text fed to stdin; none means `/dev/null`. */
  stdin?: string
}

/** A fresh job id (letters and digits only, so it needs no quoting). */
export function newJobId(): string {
  return randomUUID().replaceAll('-', '')
}

/** Upload a job's `.env` and `.in` files, when it has any. */
async function writeJobFiles(state: SandboxState, id: string, input: JobInput, what: string): Promise<void> {
  const files: { path: string; data: string }[] = []
  if (Object.keys(input.env).length > 0) files.push({ path: `${state.paths.jobs}/${id}.env`, data: callEnvFileText(input.env) })
  if (input.stdin !== undefined) files.push({ path: `${state.paths.jobs}/${id}.in`, data: input.stdin })
  if (files.length > 0) await state.toolbox.upload(files, what)
}

/** The header's verdict: the group id, or the refusal. */
type Header = { pgid: number } | { refused: SandboxPathError }

/** Read the job script's header line (`undefined` when it is not one). */
function parseHeader(line: string, cwd: string): Header | undefined {
  if (!line.startsWith(HEADER_MARK)) return undefined
  const body = line.slice(HEADER_MARK.length)
  const pgid = /^pgid=(\d+)$/.exec(body)
  if (pgid) return { pgid: Number(pgid[1]) }
  if (body === 'cwd-escape') {
    return { refused: new SandboxPathError('symlink-escape', cwd, `Working directory ${JSON.stringify(cwd)} resolves (through a symlink) outside the sandbox workspace. Use a directory inside it.`) }
  }
  return {
    refused: new SandboxPathError('not-found', cwd, `Working directory ${JSON.stringify(cwd)} does not exist in the sandbox workspace, is not a directory, or the sandbox user cannot enter it. Create it with fs.mkdir first.`),
  }
}

/** The message of a job whose script ended before its header. */
function notStartedMessage(command: string, exitCode: number, said: string): string {
  return `The job script ended (exit ${exitCode}) before starting ${JSON.stringify(command)}: ${said.trim().slice(0, 512) || 'no output'}. The sandbox needs a POSIX /bin/sh and /proc.`
}

/** True when the job script itself is missing (something removed the provider's folder). */
function scriptMissing(state: SandboxState, result: CommandResult): boolean {
  return result.exitCode === 127 || (result.exitCode === 2 && result.stderr.includes(state.paths.job))
}

/**
 * Run a job to its end in a pooled session. `onStarted` gets the job id
 * before the command is sent, so a timeout or abort can kill it.
 * @returns The exit code and the output, header removed.
 * @throws SandboxPathError for a refused cwd; SandboxOperationError `exec-failed` when the script could not start.
 */
export async function runJob(state: SandboxState, id: string, command: string, input: JobInput): Promise<CommandResult> {
  await writeJobFiles(state, id, input, 'process.exec')
  const line = jobCommand(state.paths, id, state.physicalRoot, input.cwd, command)
  let result = await state.toolbox.run(line, 'process.exec')
  let newline = result.stderr.indexOf('\n')
  let header = parseHeader(newline === -1 ? result.stderr : result.stderr.slice(0, newline), input.cwd)
  if (!header && scriptMissing(state, result)) {
    await state.reinstall('process.exec')
    await writeJobFiles(state, id, input, 'process.exec')
    result = await state.toolbox.run(line, 'process.exec')
    newline = result.stderr.indexOf('\n')
    header = parseHeader(newline === -1 ? result.stderr : result.stderr.slice(0, newline), input.cwd)
  }
  if (!header) {
    // Killed before it started (the .kill mark): nothing ran, the caller reports its own reason.
    if (result.exitCode === 143) return result
    throw operationError('exec-failed', notStartedMessage(command, result.exitCode, result.stderr || result.stdout))
  }
  if ('refused' in header) throw header.refused
  return { exitCode: result.exitCode, stdout: result.stdout, stderr: newline === -1 ? '' : result.stderr.slice(newline + 1) }
}

/**
 * Kill job `id`: its group, every process with its marker, and their
 * descendants; SIGKILL after `killGraceMs`. Resolves once none is left.
 * @throws SandboxOperationError `timeout` when processes survive SIGKILL for 30 s.
 */
export async function killJob(state: SandboxState, id: string, signal: KillSignal): Promise<void> {
  const steps = Math.ceil(state.config.killGraceMs / 50)
  const result = await state.toolbox.run(killCommand(state.paths, id, signal.slice(3), steps), 'kill')
  if (result.exitCode === 0) return
  if (result.exitCode === 3) {
    throw operationError('timeout', `Job ${id} still has live processes 30 s after SIGKILL (stuck in uninterruptible I/O, or owned by another user): ${result.stdout.trim()}`)
  }
  throw operationError('exec-failed', `Killing job ${id} in sandbox ${state.id} failed (exit ${result.exitCode}): ${result.stderr.trim() || result.stdout.trim() || 'no output'}`)
}

/** How long a follow may keep failing or ending early with no exit code before the job counts as lost, in ms. */
const FOLLOW_STALL_MS = 60_000

/** A started job: its output as it comes, its group, its exit. */
export interface StartedJob {
  /** Resolves with the process-group id once the job runs; rejects when it could not start. */
  readonly started: Promise<number>
  readonly exit: Promise<ProcessExit>
  /** Record that the job was signalled, so a 128+N exit is reported with the signal's name. */
  signalled(signal: KillSignal): void
}

/**
 * Start a job in a session of its own and follow its logs. The socket is
 * opened again whenever it closes before the daemon reports an exit code;
 * the daemon sends the whole log again, so the part already delivered is
 * skipped (counted per stream).
 */
export async function startJob(state: SandboxState, id: string, command: string, input: JobInput, sinks: { stdout: (text: string) => void; stderr: (text: string) => void; end: () => void }): Promise<StartedJob> {
  await writeJobFiles(state, id, input, 'process.spawn')
  const { sessionId, commandId } = await state.toolbox.start(jobCommand(state.paths, id, state.physicalRoot, input.cwd, command), 'process.spawn')
  let onStarted!: (pgid: number) => void
  let onRefused!: (error: Error) => void
  const started = new Promise<number>((resolve, reject) => {
    onStarted = resolve
    onRefused = reject
  })
  started.catch(() => undefined)
  let headerDone = false
  let pendingHeader = ''
  let early = ''
  const stderr = (text: string) => {
    if (headerDone) return sinks.stderr(text)
    pendingHeader += text
    const newline = pendingHeader.indexOf('\n')
    if (newline === -1 && pendingHeader.length < 256) return
    headerDone = true
    const line = newline === -1 ? '' : pendingHeader.slice(0, newline)
    const header = parseHeader(line, input.cwd)
    if (header && 'pgid' in header) onStarted(header.pgid)
    else if (header) onRefused(header.refused)
    const rest = header ? pendingHeader.slice(newline + 1) : pendingHeader
    early = rest
    if (rest !== '') sinks.stderr(rest)
  }
  const stdout = (text: string) => {
    if (!headerDone && early.length < 512) early += text
    sinks.stdout(text)
  }
  let signal: KillSignal | undefined
  const exit = follow(state, sessionId, commandId, stdout, stderr).then(
    (code) => {
      if (!headerDone) {
        // No header came: what was held back is the script's own output, not a header.
        headerDone = true
        early = pendingHeader
        if (pendingHeader !== '') sinks.stderr(pendingHeader)
      }
      sinks.end()
      onRefused(operationError('spawn-failed', notStartedMessage(command, code, early)))
      state.toolbox.dropSession(sessionId)
      if (signal && code > 128) {
        const name = Object.entries(constants.signals).find(([, number]) => number === code - 128)?.[0]
        if (name) return { exitCode: code, signal: name }
      }
      return { exitCode: code }
    },
    (error: unknown) => {
      sinks.end()
      onRefused(error instanceof Error ? error : new Error(String(error)))
      throw error
    },
  )
  exit.catch(() => undefined)
  return { started, exit, signalled: (s) => (signal = s) }
}

/** Follow until the daemon reports an exit code; returns it. */
async function follow(state: SandboxState, sessionId: string, commandId: string, stdout: (text: string) => void, stderr: (text: string) => void): Promise<number> {
  const delivered = { stdout: 0, stderr: 0 }
  const skipping = (stream: 'stdout' | 'stderr', sink: (text: string) => void) => {
    let seen = 0
    return (text: string) => {
      const start = seen
      seen += text.length
      if (seen <= delivered[stream]) return
      sink(text.slice(Math.max(0, delivered[stream] - start)))
      delivered[stream] = seen
    }
  }
  let lastProgress = Date.now()
  for (;;) {
    const before = delivered.stdout + delivered.stderr
    let failure: unknown
    try {
      await state.toolbox.follow(sessionId, commandId, skipping('stdout', stdout), skipping('stderr', stderr))
    } catch (error) {
      failure = error
    }
    let code: number | undefined
    try {
      code = await state.toolbox.exitCodeOf(sessionId, commandId, 'process.spawn')
    } catch (error) {
      failure = error
      // The sandbox is gone (or being deleted, or stopped): the process went with it; waiting longer cannot help.
      if (SandboxError.isInstance(error) && error.reason !== 'unreachable' && error.reason !== 'rate-limited') throw error
    }
    if (code !== undefined) return code
    state.assertLive('process.spawn (wait)')
    if (delivered.stdout + delivered.stderr > before) lastProgress = Date.now()
    if (Date.now() - lastProgress > FOLLOW_STALL_MS) {
      throw operationError('unreachable', `Lost the output of a process in sandbox ${state.id}: its log stream kept failing for ${FOLLOW_STALL_MS / 1000} s (${failure instanceof Error ? failure.message : 'it closed before the process ended'}). The process may still run; kill it or destroy the sandbox.`, failure)
    }
    await pause(failure === undefined ? 100 : 500)
  }
}
