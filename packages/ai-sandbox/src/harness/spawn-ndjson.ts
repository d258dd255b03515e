/**
 * `spawnNdjson`: run an agent CLI through `handle.process.spawn` and stream its
 * stdout as parsed NDJSON values. Owns the process lifecycle of one run (stdin
 * feed, concurrent stderr drain, kill on early stop or abort); it never
 * interprets events or judges an exit code, which harness adapters do.
 * Invariant: once spawned, the process is either observed to exit or killed
 * before the iterator settles, whatever way the consumer leaves.
 */
import { SandboxError } from '../contracts/errors.js'
import type { SandboxHandle } from '../contracts/handle.js'
import type { ProcessOptions, SpawnedProcess } from '../contracts/process.js'
import type { JournalOptions } from '../journal/journal-options.js'
import { readJournalNdjson, startJournaledAgent, type SpawnNdjsonExit } from '../journal/journaled-spawn.js'
import { JournalError } from '../journal/errors.js'
import { NOT_JSON, parseNdjsonLine } from '../journal/ndjson-line.js'
import { toLines } from '../journal/to-lines.js'

export type { SpawnNdjsonExit }

/** Options of {@link spawnNdjson}. */
export interface SpawnNdjsonOptions {
  /** Working directory inside the sandbox. Default: the workspace root. */
  cwd?: string
  /** Extra environment variables, merged over the sandbox environment. */
  env?: Record<string, string>
  /** Aborting kills the process and ends the iteration without an error. */
  signal?: AbortSignal
  /**
   * Text written to stdin before it is closed. Default: none; stdin is closed
   * at once either way, so a CLI that reads stdin sees EOF. Needs capability
   * `writableStdin`; without it, feed input through a file and a redirect.
   */
  stdin?: string
  /**
   * Called with each non-empty stdout text that is not JSON. Such text is
   * skipped, never fatal. When a JSON object follows other text on the same
   * line (a banner printed without a newline), the object is still yielded and
   * only the text in front of it is reported here.
   */
  onNonJsonLine?: (line: string) => void
  /** Called with each stderr chunk as it arrives. stderr is drained whether or not this is set. */
  onStderr?: (chunk: string) => void
  /** Called once after stdout ended and the process exited. Not called when the consumer stops early. */
  onExit?: (exit: SpawnNdjsonExit) => void | Promise<void>
  /** Characters of stderr kept for {@link SpawnNdjsonExit.stderrTail}. Default: 65536. */
  stderrTailLength?: number
  /**
   * Once the command exited, stop whatever it left running in the background
   * (`kill()` on its job: the process group and its descendants), so nothing
   * of the run outlives it. Default `false`.
   */
  stopJobOnExit?: boolean
  /**
   * Refuse a stdout line longer than this many UTF-8 bytes (see `toLines`): the
   * iteration throws `LineTooLongError` (a `SandboxLimitError`) as soon as the
   * line passes it, and the process is killed. Default
   * {@link DEFAULT_MAX_LINE_BYTES} (32 MiB), the adapters' cap; pass `Infinity`
   * to read lines of any length.
   */
  maxLineBytes?: number
  /**
   * Route the run through its journal (spec 000 "Durable runs"): the agent's
   * stdout is appended to `<dir>/<encodeRunId(runId)>.ndjson` inside the
   * sandbox and read back from there, so the agent survives this host and
   * another host can read the same output from byte 0. On this path `signal`
   * stops the reading only (the agent runs on; that is a detach),
   * `stopJobOnExit` does not apply, `stdin` goes through a file, and the
   * journal is deleted once its sentinel was read (unless `journal.keep`). Default: no journal, the
   * agent's stdout is a pipe this host holds.
   */
  journal?: JournalOptions
  /** Journaled path only: variables exported to the agent but not to the shell that writes its exit sentinel (see `startJournaledAgent`). */
  agentEnv?: Record<string, string>
}

const DEFAULT_STDERR_TAIL = 64 * 1024

/**
 * The longest line of CLI output a run reads, in UTF-8 bytes (32 MiB): a
 * longer one ends the run with `RUN_ERROR` `line_too_long` and stops the CLI,
 * so a runaway writer cannot grow host memory without bound. It is the default
 * `maxLineBytes` of {@link spawnNdjson} and of every adapter (which take
 * `maxLineBytes` to change it, see `HarnessCommonOptions`).
 */
export const DEFAULT_MAX_LINE_BYTES = 32 * 1024 * 1024

/**
 * Spawn `command` in the sandbox and yield each stdout line parsed as JSON.
 * Empty lines are skipped, non-JSON lines go to `onNonJsonLine`. stderr is
 * drained concurrently (so a chatty stderr never blocks the child) into a
 * bounded tail. When stdout ends, the process is awaited and `onExit` gets
 * its exit code, signal and stderr tail. A non-zero exit does NOT throw: the
 * harness adapter decides what an exit means. If the consumer stops early
 * (`break`, `return`, a throw) the process is killed; if `signal` aborts, the
 * process is killed and the iteration ends normally after `onExit`. Nothing is
 * spawned until iteration starts, nor at all if `signal` is already aborted.
 *
 * @param handle - The sandbox to run in (capability `backgroundProcesses`).
 * @param command - POSIX shell command, run with `sh -c` by the provider.
 * @param options - {@link SpawnNdjsonOptions}.
 * @returns Parsed JSON values, one per stdout line, in order.
 * @throws whatever `handle.process.spawn` throws (providers use
 *   `SandboxOperationError` reason `spawn-failed`); `LineTooLongError`
 *   `line-too-long` when a line passes `maxLineBytes` (default 32 MiB); `UnsupportedCapabilityError`
 *   after the run when `stdin` was given but the provider cannot write stdin;
 *   with `journal`: what `startJournaledAgent` and `readJournal` throw
 *   (`JournalError`, `JournalAttachUnavailableError` `journal-stalled`);
 *   any error thrown by a callback. A process still running is killed before
 *   the error reaches the consumer.
 * @example
 * ```ts
 * for await (const event of spawnNdjson(handle, 'codex exec --json "hi" </dev/null', {
 *   cwd: '/workspace',
 *   onExit: ({ exitCode, stderrTail }) => { if (exitCode !== 0) console.error(stderrTail) },
 * })) console.log(event)
 * ```
 */
export async function* spawnNdjson(
  handle: SandboxHandle,
  command: string,
  options: SpawnNdjsonOptions = {},
): AsyncIterable<unknown> {
  const { cwd, env, signal, stdin, onNonJsonLine, onStderr, onExit, stopJobOnExit } = options
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES
  const stderrTailLength = Math.max(0, options.stderrTailLength ?? DEFAULT_STDERR_TAIL)
  if (signal?.aborted) return
  if (options.journal) {
    try {
      await startJournaledAgent(handle, command, { journal: options.journal, ...(cwd !== undefined ? { cwd } : {}), ...(env !== undefined ? { env } : {}), ...(options.agentEnv ? { agentEnv: options.agentEnv } : {}), ...(stdin !== undefined ? { stdin } : {}) })
    } catch (error) {
      // Another host launched this run's agent first (a takeover that started it fresh raced a host that woke up):
      // nothing was started here, and the run's one agent is the one in the journal, which is read like any other.
      if (!JournalError.isInstance(error) || error.reason !== 'journal-exists') throw error
    }
    yield* readJournalNdjson(handle, {
      journal: options.journal,
      ...(signal ? { signal } : {}),
      ...(onNonJsonLine ? { onNonJsonLine } : {}),
      ...(onExit ? { onExit } : {}),
      maxLineBytes,
      stderrTailLength,
    })
    return
  }

  const child = await handle.process.spawn(command, processOptions({ cwd, env, signal }))
  const killOnAbort = () => void child.kill().catch(() => undefined) // the stop below reports kill errors
  signal?.addEventListener('abort', killOnAbort, { once: true })
  const stderr = drainStderr(child, stderrTailLength, onStderr)
  const stdinDone = feedStdin(child, stdin)
  let exited = false
  try {
    for await (const line of toLines(child.stdout, { maxLineBytes })) {
      if (signal?.aborted) break
      if (line.trim() === '') continue
      const { value, noise } = parseNdjsonLine(line)
      if (noise !== undefined) onNonJsonLine?.(noise)
      if (value !== NOT_JSON) yield value
    }
    if (signal?.aborted) await child.kill()
    const exit = await child.wait()
    exited = true
    if (stopJobOnExit) await child.kill()
    const [tail, stdinError] = await Promise.all([stderr.done, stdinDone])
    if (stdinError) throw stdinError
    if (stderr.callbackError !== undefined) throw stderr.callbackError
    await onExit?.({ exitCode: exit.exitCode, ...(exit.signal ? { signal: exit.signal } : {}), stderrTail: tail })
  } finally {
    signal?.removeEventListener('abort', killOnAbort)
    if (!exited) {
      await child.kill()
      await Promise.all([stderr.done, stdinDone])
    }
  }
}

/** Only the keys that are set, so a provider testing `'signal' in options` sees the truth. */
function processOptions(input: ProcessOptions): ProcessOptions {
  const out: ProcessOptions = {}
  if (input.cwd !== undefined) out.cwd = input.cwd
  if (input.env !== undefined) out.env = input.env
  if (input.signal !== undefined) out.signal = input.signal
  return out
}

/**
 * Write `text` (if any) and close stdin, concurrently with reading stdout so
 * a child that writes before it reads cannot deadlock against us. Failures
 * are not fatal: a child that exits or closes stdin before reading it makes
 * the write fail (EPIPE), which is the child's choice; its exit status,
 * reported through `onExit`, tells the outcome. The one failure returned is a
 * provider refusing stdin (`unsupported-capability`) when `text` was given.
 */
async function feedStdin(child: SpawnedProcess, text: string | undefined): Promise<SandboxError | undefined> {
  try {
    if (text !== undefined && text.length > 0) await child.stdin.write(text)
    await child.stdin.end()
  } catch (error) {
    if (text !== undefined && SandboxError.isInstance(error) && error.reason === 'unsupported-capability') return error
    // Otherwise already gone: the child no longer reads stdin (see above).
  }
  return undefined
}

interface StderrDrain {
  /** Resolves with the tail once stderr has ended; never rejects. */
  readonly done: Promise<string>
  /** The first error thrown by `onStderr`, if any. */
  callbackError?: unknown
}

/** Read stderr to its end, keeping a bounded tail and forwarding chunks to `onStderr`. */
function drainStderr(child: SpawnedProcess, limit: number, onStderr?: (chunk: string) => void): StderrDrain {
  const drain: { done: Promise<string>; callbackError?: unknown } = { done: Promise.resolve('') }
  drain.done = (async () => {
    let tail = ''
    try {
      for await (const chunk of child.stderr) {
        tail += chunk
        // Trim only once the tail is twice the limit: amortised linear cost.
        if (tail.length > 2 * limit) tail = tail.slice(tail.length - limit)
        if (onStderr && drain.callbackError === undefined) {
          try {
            onStderr(chunk)
          } catch (error) {
            drain.callbackError = error // reported after exit; keep draining so the child never blocks
          }
        }
      }
    } catch {
      // A stderr stream that errors ends the tail there; stdout and wait() report the real failure.
    }
    return trimTail(tail, limit)
  })()
  return drain
}

/** The last `limit` characters, never starting with half of a surrogate pair. */
function trimTail(tail: string, limit: number): string {
  if (tail.length <= limit) return tail
  const out = tail.slice(tail.length - limit)
  const first = out.charCodeAt(0)
  return first >= 0xdc00 && first <= 0xdfff ? out.slice(1) : out
}
