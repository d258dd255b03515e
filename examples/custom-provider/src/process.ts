/**
 * `handle.process` of the directory provider: `/bin/sh -c <command>` on the
 * host, in the workspace, with streaming output, stdin, exit codes, and a
 * `kill()` that reaches everything the command started.
 *
 * How processes are found: every process is started with the environment
 * variable `DIRECTORY_SANDBOX_JOB=<sandbox id>/<job id>`. Children inherit
 * it, also those that leave the process group with `setsid` or are adopted by
 * init after a double fork, so scanning `/proc/<pid>/environ` finds a job (or
 * a whole sandbox, by the `<sandbox id>/` prefix) from any process, even
 * after this one restarted. A zombie's environment reads as empty, so a zombie
 * counts as gone. Limits: Linux only (`/proc`), and a program that execs with
 * a cleared environment (`env -i`) drops the tag and escapes.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { constants } from 'node:os'
import { Readable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { parseOptions, SandboxConfigError, SandboxError, SandboxLimitError, SandboxOperationError, SandboxPathError } from '@tanstack/ai-sandbox'
import type { ExecOptions, ExecResult, ProcessExit, ProcessOptions, SandboxProcess, SpawnedProcess } from '@tanstack/ai-sandbox'
import { at, locate, openFolder } from './paths.js'

/** The variable that tags every process of a sandbox: `<sandbox id>/<job id>`. */
export const JOB_VARIABLE = 'DIRECTORY_SANDBOX_JOB'

/** How long output is still read after the shell exited, in ms, before a background child holding the pipes is cut off. */
export const DRAIN_MS = 200

/** Host variables a sandbox process inherits; the rest of the host environment (API keys...) stays out. */
const INHERITED = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'] as const

/** Variable names must be shell identifiers: anything else cannot be read as `$NAME` and may smuggle syntax. */
const envSchema = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'variable names must match [A-Za-z_][A-Za-z0-9_]*'), z.string())

/**
 * Validate an environment object.
 * @param field - Named in the error, e.g. `env.set` or `create.env`.
 * @throws SandboxConfigError naming the field and the bad variable.
 */
export function parseEnv(env: unknown, field: string): Record<string, string> {
  return parseOptions(envSchema, env, field)
}

/** What the process module needs from its sandbox. */
export interface ProcessContext {
  readonly provider: string
  readonly sandboxId: string
  /** The real workspace directory: the default cwd. */
  readonly workspaceRoot: string
  /** ms between the first signal of `kill()` and SIGKILL. */
  readonly killGraceMs: number
  /** Most bytes of stdout plus stderr one `exec` collects before it is killed. */
  readonly maxExecOutputBytes: number
  /** The sandbox environment (create's `env` merged with every `env.set`). */
  readonly env: () => Promise<Readonly<Record<string, string>>>
  /** Throws `SandboxOperationError` (`destroyed`) once the sandbox is gone. */
  readonly assertAlive: () => Promise<void>
}

/**
 * Pids of the live processes whose `DIRECTORY_SANDBOX_JOB` starts with
 * `prefix` (`<sandbox id>/` for a sandbox, `<sandbox id>/<job id>` for a job).
 * Processes of other users cannot be read and are skipped.
 */
export async function findTagged(prefix: string): Promise<number[]> {
  const wanted = `${JOB_VARIABLE}=${prefix}`
  const names = (await readdir('/proc')).filter((name) => /^\d+$/.test(name))
  const found = await Promise.all(
    names.map(async (name) => {
      const environ = await readFile(`/proc/${name}/environ`, 'latin1').catch(() => '')
      return environ.split('\0').some((entry) => entry.startsWith(wanted)) ? Number(name) : undefined
    }),
  )
  return found.filter((pid): pid is number => pid !== undefined)
}

/**
 * Stop every process tagged with `prefix`: `signal` to each (once), then
 * SIGKILL to whatever is left after `graceMs`. Resolves when none is left.
 * Processes forked meanwhile carry the tag too and are caught by the next scan.
 * @throws SandboxOperationError `exec-failed` when processes survive SIGKILL for 5 s (stuck in the kernel).
 */
export async function stopTagged(prefix: string, signal: NodeJS.Signals, graceMs: number, provider: string): Promise<void> {
  const signalled = new Set<number>()
  const started = Date.now()
  for (;;) {
    const pids = await findTagged(prefix)
    if (pids.length === 0) return
    const elapsed = Date.now() - started
    if (elapsed > graceMs + 5000) {
      throw new SandboxOperationError('exec-failed', provider, `Processes ${pids.join(', ')} survived SIGKILL for 5 s; they are stuck (uninterruptible sleep?).`)
    }
    const late = elapsed >= graceMs
    for (const pid of pids) {
      if (!late && signalled.has(pid)) continue
      signalled.add(pid)
      try {
        process.kill(pid, late ? 'SIGKILL' : signal)
      } catch {
        // It exited between the scan and the signal.
      }
    }
    await sleep(25)
  }
}

/**
 * Unread output held per stream, in bytes. Past it the pipe is no longer read,
 * so the process blocks on its next write until the consumer reads again
 * (as with Node's own child streams): host memory stays bounded.
 */
export const OUTPUT_HIGH_WATER_MARK = 1024 * 1024

/** A pipe of the child as the contract's text stream, with backpressure and a way to end it early. */
function textStream(source: Readable) {
  let held = false // the consumer is behind: the pipe is paused
  let onResume: (() => void) | undefined
  const output = new Readable({
    encoding: 'utf8', // decodes so a character is never split across chunks
    highWaterMark: OUTPUT_HIGH_WATER_MARK,
    read: () => {
      if (!held) return
      held = false
      source.resume()
      onResume?.()
    },
  })
  let open = true
  const finish = () => {
    if (open) output.push(null)
    open = false
  }
  source.on('data', (chunk: Buffer) => {
    if (open && !output.push(chunk)) {
      held = true
      source.pause()
    }
  })
  source.once('end', finish)
  let isClosed = false
  const closed = new Promise<void>((resolve) => source.once('close', resolve)).then(() => {
    isClosed = true
    finish()
  })
  return {
    output: output as AsyncIterable<string>,
    /**
     * After the shell exited: resolves when the pipe closed, or once it was
     * read for `ms` without closing (a background child still holds it).
     * While the consumer is behind it waits: what the pipe holds then was
     * written before the exit and must be delivered.
     */
    async drained(ms: number): Promise<void> {
      while (!isClosed) {
        if (held) await Promise.race([closed, new Promise<void>((resolve) => (onResume = resolve))])
        else if ((await Promise.race([closed.then(() => true), sleep(ms).then(() => false)])) || !held) return
      }
    },
    /** Stop reading and end the stream. */
    cut: () => {
      source.destroy()
      finish()
    },
  }
}

/** Build the process API of one sandbox. */
export function createDirectoryProcess(ctx: ProcessContext): SandboxProcess {
  async function start(command: string, options: ProcessOptions): Promise<SpawnedProcess> {
    if (options.signal?.aborted) throw new SandboxOperationError('aborted', ctx.provider, 'The command was not started: its AbortSignal is already aborted.', { cause: options.signal.reason })
    await ctx.assertAlive()
    // The cwd is opened like any fs path (no link followed) and handed to the child as /proc/self/fd/<fd>:
    // the child changes into that very folder even if the agent swapped the path for a symlink meanwhile.
    const folder = await openCwd(options.cwd ?? '.', ctx.workspaceRoot)
    const tag = `${ctx.sandboxId}/${randomUUID()}`
    const inherited = Object.fromEntries(INHERITED.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name]]])))
    let env: Record<string, string>
    try {
      // The tag goes last, so no caller env can remove it.
      env = { ...inherited, ...(await ctx.env()), ...parseEnv(options.env ?? {}, 'process.env'), [JOB_VARIABLE]: tag }
    } catch (error) {
      await folder.close()
      throw error
    }
    // detached: the job gets its own session, so a Ctrl-C in the host's terminal does not reach it directly.
    const child = spawn('/bin/sh', ['-c', command], { cwd: at(folder), env, detached: true, stdio: 'pipe' })
    // Everything that listens to the child is attached before the next await: a quick command may exit at once.
    child.stdin.on('error', () => undefined) // EPIPE once the process stops reading; write() reports it
    const stdout = textStream(child.stdout)
    const stderr = textStream(child.stderr)
    const exited = new Promise<ProcessExit>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ? { exitCode: 128 + constants.signals[signal], signal } : { exitCode: code ?? 0 })),
    )
    try {
      await new Promise((resolve, reject) => child.once('spawn', resolve).once('error', reject))
    } catch (error) {
      throw new SandboxOperationError('spawn-failed', ctx.provider, `Could not start /bin/sh: ${String(error)}`, { cause: error })
    } finally {
      await folder.close() // the child is already in its cwd
    }
    child.on('error', () => undefined) // later errors (a signal to a reaped pid) are not fatal

    // Settles when the shell exited and its output is delivered; a background child holding the pipes gets DRAIN_MS.
    const finished = exited.then(async (exit) => {
      await Promise.all([stdout.drained(DRAIN_MS), stderr.drained(DRAIN_MS)])
      stdout.cut()
      stderr.cut()
      return exit
    })
    const kill = (signal: 'SIGTERM' | 'SIGKILL' | 'SIGINT' = 'SIGTERM') => stopTagged(tag, signal, ctx.killGraceMs, ctx.provider)
    options.signal?.addEventListener('abort', () => void kill().catch(() => undefined), { once: true })

    return {
      pid: child.pid,
      stdout: stdout.output,
      stderr: stderr.output,
      stdin: {
        write: (data) =>
          new Promise<void>((resolve, reject) => {
            child.stdin.write(data, (error) =>
              error ? reject(new SandboxOperationError('exec-failed', ctx.provider, `stdin.write failed: ${error.message} (the process no longer reads stdin).`, { cause: error })) : resolve(),
            )
          }),
        // Settles however stdin ends: flushed, already closed, or broken because the process exited first.
        end: () =>
          new Promise<void>((resolve) => {
            if (child.stdin.writableFinished || child.stdin.destroyed) return resolve()
            child.stdin.once('finish', resolve).once('close', resolve).once('error', () => resolve())
            child.stdin.end()
          }),
      },
      wait: () => finished,
      kill,
    }
  }

  return {
    spawn: (command, options = {}) => start(command, options),

    async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
      const { stdin, timeoutMs, signal, ...rest } = options
      if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
        throw new SandboxConfigError('exec.timeoutMs', `Invalid option exec.timeoutMs: expected a positive number of ms (got ${String(timeoutMs)}).`)
      }
      if (signal?.aborted) throw new SandboxOperationError('aborted', ctx.provider, 'The command was not started: its AbortSignal is already aborted.', { cause: signal.reason })
      const job = await start(command, rest)
      let stopped: { reason: 'timeout' | 'aborted' | 'too-large'; killing: Promise<void> } | undefined
      const stop = (reason: 'timeout' | 'aborted' | 'too-large') => {
        stopped ??= { reason, killing: job.kill('SIGKILL').catch(() => undefined) }
      }
      let stdout = ''
      let stderr = ''
      let bytes = 0
      const collect = async (stream: AsyncIterable<string>, add: (text: string) => void) => {
        for await (const text of stream) {
          bytes += Buffer.byteLength(text)
          if (bytes > ctx.maxExecOutputBytes) stop('too-large') // host memory is bounded; stream big output with spawn
          else add(text)
        }
      }
      const reading = Promise.all([collect(job.stdout, (text) => (stdout += text)), collect(job.stderr, (text) => (stderr += text))])
      const timer = timeoutMs === undefined ? undefined : setTimeout(() => stop('timeout'), timeoutMs)
      const onAbort = () => stop('aborted')
      signal?.addEventListener('abort', onAbort, { once: true })
      try {
        // A command that never reads its stdin makes this write fail with EPIPE; that is its choice, not an error.
        const feeding = (async () => {
          if (stdin !== undefined) await job.stdin.write(stdin).catch(() => undefined)
          await job.stdin.end()
        })()
        void feeding.catch(() => undefined) // the result never waits on stdin: the command may have exited without reading it
        const exit = await job.wait()
        await reading
        if (stopped) {
          await stopped.killing
          if (stopped.reason === 'too-large') {
            const limitBytes = ctx.maxExecOutputBytes
            throw new SandboxLimitError('exec-output-too-large', { limitBytes, option: 'directorySandbox({ maxExecOutputBytes })', provider: ctx.provider, message: `exec printed more than ${limitBytes} bytes and was killed: ${command}. Stream large output with process.spawn, or raise directorySandbox({ maxExecOutputBytes }).` })
          }
          throw stopped.reason === 'timeout'
            ? new SandboxOperationError('timeout', ctx.provider, `Command timed out after ${timeoutMs} ms and was killed: ${command}`)
            : new SandboxOperationError('aborted', ctx.provider, `Command aborted and killed: ${command}`, { cause: signal?.reason })
        }
        return { exitCode: exit.exitCode, stdout, stderr }
      } finally {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
    },
  }
}

/** Open the folder `cwd` names inside the workspace, the way the fs methods do. */
async function openCwd(cwd: string, root: string) {
  const { host } = await locate(cwd, root, true)
  try {
    return await openFolder(root, host, false, cwd)
  } catch (error) {
    if (SandboxError.isInstance(error)) throw error
    throw new SandboxPathError('not-found', cwd, `cwd ${JSON.stringify(cwd)} is not a folder in the sandbox workspace.`, { cause: error })
  }
}
