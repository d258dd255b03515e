/**
 * Jobs and wrapper calls: every command reaches the container through the
 * wrapper (sandbox-files.ts), whose frame carries the exit code and the exact
 * bytes of stdout and stderr. `runWrapped` runs one to its end in a pooled
 * session; `killJob` stops a job's whole tree from another session;
 * `startJob` runs one in the background and follows its framed log stream,
 * reopening it (the stream replays from the start: what was read is skipped)
 * and watching the process record, since a destroyed container's stream
 * never ends. Design notes: docs/design/cloudflare.md (section 11)
 */
import { SandboxPathError } from '@tanstack/ai-sandbox'
import { callEnvFileText } from '@tanstack/ai-sandbox/internal'
import { operationError, restartedError } from './errors.js'
import { runCommand } from './sandbox-files.js'
import type { SandboxState } from './state.js'

/** Signals `kill()` accepts (the contract's set). */
export type KillSignal = 'SIGTERM' | 'SIGKILL' | 'SIGINT'

/** Signal numbers of the signals a job's exit is reported with (Linux). */
const SIGNAL_NUMBERS: Readonly<Record<number, string>> = { 1: 'SIGHUP', 2: 'SIGINT', 9: 'SIGKILL', 15: 'SIGTERM' }

/** What a wrapper call returned. */
export interface WrappedResult {
  readonly exitCode: number
  readonly stdout: Uint8Array
  readonly stderr: Uint8Array
  /** What the job script noted: `-`, `cwd-missing`, `cwd-escape`, `killed`. */
  readonly status: string
  /** Set when stdout and stderr together passed the bound (they were not sent). */
  readonly tooLarge?: { readonly stdoutBytes: number; readonly stderrBytes: number }
}

/** Past this many UTF-8 bytes a command travels in a file: Linux caps one argument at 128 KiB (MAX_ARG_STRLEN). */
const COMMAND_IN_FILE_BYTES = 65536

/** What a job needs. */
export interface JobInput {
  /** The caller's shell command. */
  command: string
  /** Absolute lexical cwd inside the workspace (the script confines it). */
  cwd: string
  /** Per-call variables (written to a file, never put in the command line). */
  env: Record<string, string>
  /** Text fed to stdin; none means `/dev/null`. */
  stdin?: string
}

/** A fresh job id (letters and digits only, so it needs no quoting). */
export function newJobId(): string {
  return crypto.randomUUID().replaceAll('-', '')
}

const encoder = new TextEncoder()

/** Base64 of bytes (or of a string's UTF-8), without Node's Buffer. */
export function toBase64(data: Uint8Array | string): string {
  const bytes = typeof data === 'string' ? encoder.encode(data) : data
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(binary)
}

/** Bytes of a base64 string (whitespace ignored). */
export function fromBase64(text: string): Uint8Array {
  const binary = atob(text.replace(/\s+/g, ''))
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

function commandInFile(command: string): boolean {
  return command.length > COMMAND_IN_FILE_BYTES / 3 && encoder.encode(command).length > COMMAND_IN_FILE_BYTES
}

/** The job script's arguments after the id: `<physical root> <cwd> <command>`, or an empty command and `file` when it is in `<id>.cmd`. */
export function jobArgs(state: SandboxState, input: JobInput): string[] {
  return commandInFile(input.command) ? [state.physicalRoot, input.cwd, '', 'file'] : [state.physicalRoot, input.cwd, input.command]
}

/** Upload a job's `.env`, `.in` and `.cmd` files, when it has any. */
export async function writeJobFiles(state: SandboxState, id: string, input: JobInput, what: string): Promise<void> {
  const writes: Promise<void>[] = []
  if (commandInFile(input.command)) writes.push(state.toolbox.write(`${state.paths.jobs}/${id}.cmd`, toBase64(input.command), what, 'exec-failed'))
  if (Object.keys(input.env).length > 0) writes.push(state.toolbox.write(`${state.paths.jobs}/${id}.env`, toBase64(callEnvFileText(input.env)), what, 'exec-failed'))
  if (input.stdin !== undefined) writes.push(state.toolbox.write(`${state.paths.jobs}/${id}.in`, toBase64(input.stdin), what, 'exec-failed'))
  await Promise.all(writes)
}

/**
 * Run the wrapper in `mode` for call `id` and read its frame.
 * @throws SandboxOperationError `not-found` when the marker is gone (the container restarted empty); `reason` when no frame came back.
 */
export async function runWrapped(state: SandboxState, id: string, mode: string, args: readonly string[], what: string, reason: 'exec-failed' | 'fs-failed' = 'exec-failed'): Promise<WrappedResult> {
  const result = await state.toolbox.run(runCommand(state.paths, state.marker, id, state.config.maxExecOutputBytes, mode, args), what, reason)
  const lines = result.stdout.split('\n')
  if (lines.includes('TSB-GONE')) throw restartedError(state.id, what)
  const head = lines.findIndex((line) => line.startsWith('TSB1 '))
  if (head === -1) {
    throw operationError(reason, `${what}: the provider's wrapper in sandbox ${state.id} printed no result (exit ${result.exitCode}): ${(result.stderr.trim() || result.stdout.trim() || 'no output').slice(0, 512)}`)
  }
  const [, code, outBytes, errBytes, status, large] = lines[head]!.split(' ')
  const exitCode = Number(code)
  if (large === 'too-large') return { exitCode, stdout: new Uint8Array(), stderr: new Uint8Array(), status: status ?? '-', tooLarge: { stdoutBytes: Number(outBytes), stderrBytes: Number(errBytes) } }
  const out = lines.slice(head + 1).find((line) => line.startsWith('O')) ?? 'O'
  const err = lines.slice(head + 1).find((line) => line.startsWith('E')) ?? 'E'
  return { exitCode, stdout: fromBase64(out.slice(1)), stderr: fromBase64(err.slice(1)), status: status ?? '-' }
}

/** The refusal of a job whose cwd the script would not enter, if any. */
export function refusalOf(status: string, cwd: string): SandboxPathError | undefined {
  if (status === 'cwd-escape') return new SandboxPathError('symlink-escape', cwd, `Working directory ${JSON.stringify(cwd)} resolves (through a symlink) outside the sandbox workspace. Use a directory inside it.`)
  if (status === 'cwd-missing') return new SandboxPathError('not-found', cwd, `Working directory ${JSON.stringify(cwd)} does not exist in the sandbox workspace, is not a directory, or cannot be entered. Create it with fs.mkdir first.`)
  return undefined
}

/**
 * Kill job `id`: its group, every process with its marker, and their
 * descendants; SIGKILL after `killGraceMs`. Resolves once none is left.
 * A container restarted empty has nothing of the job left either.
 * @throws SandboxOperationError `timeout` when processes survive SIGKILL for 30 s.
 */
export async function killJob(state: SandboxState, id: string, signal: KillSignal): Promise<void> {
  const steps = String(Math.ceil(state.config.killGraceMs / 50))
  let result: WrappedResult
  try {
    result = await runWrapped(state, `k${id}`, 'kill', [id, signal.slice(3), steps], 'kill')
  } catch (error) {
    if (error instanceof Error && /restarted empty/.test(error.message)) return
    throw error
  }
  if (result.exitCode === 0) return
  const said = new TextDecoder().decode(result.stdout).trim() || new TextDecoder().decode(result.stderr).trim()
  if (result.exitCode === 3) throw operationError('timeout', `Job ${id} still has live processes 30 s after SIGKILL (stuck in uninterruptible I/O): ${said}`)
  throw operationError('exec-failed', `Killing job ${id} in sandbox ${state.id} failed (exit ${result.exitCode}): ${said || 'no output'}`)
}

/** The name of a 128+N exit's signal, when the job was signalled. */
export function exitOf(code: number, signalled: boolean): { exitCode: number; signal?: string } {
  const name = signalled && code > 128 ? SIGNAL_NUMBERS[code - 128] : undefined
  return name ? { exitCode: code, signal: name } : { exitCode: code }
}
