/**
 * Small IO helpers the provider checks share: unique scratch folders, a
 * must-succeed shell call, file access through `fs` or (without it) `exec`,
 * a reader that drains a spawned process's stream while a check waits for a
 * marker, and a script that lists which of some pids still run. They never
 * assert anything about the provider beyond "the setup command worked", and
 * say so when it did not.
 */
import { randomUUID } from 'node:crypto'
import type { SandboxCapabilities } from '../../contracts/capabilities.js'
import type { SandboxHandle } from '../../contracts/handle.js'
import type { ExecOptions, ExecResult } from '../../contracts/process.js'
import { shellQuote } from '../../shell/quote.js'
import { describeError, preview, violation, violationError, within } from './assert.js'

/** A fresh workspace-relative folder name, so checks can share one sandbox. */
export function scratch(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`
}

/** Quote one shell word (the monorepo's single quoting helper). */
export const q = shellQuote

/**
 * Run a setup command that must succeed; a failure names the command, since
 * it is the kit's own setup (or the image lacks a POSIX tool), not the rule under test.
 */
export async function sh(handle: SandboxHandle, command: string, options?: ExecOptions): Promise<ExecResult> {
  let result: ExecResult
  try {
    result = await handle.process.exec(command, options)
  } catch (error) {
    return violation('process.exec runs a POSIX shell command (conformance setup)', `exec(${preview(command)}) threw ${describeError(error)}`)
  }
  if (result.exitCode !== 0) {
    violation(
      'process.exec runs a POSIX shell command (conformance setup)',
      `exec(${preview(command)}) exited ${result.exitCode}; stderr: ${preview(result.stderr, 400)}`,
    )
  }
  return result
}

/** Text file access through whichever of `fs` and `exec` the provider has. */
export interface WorkspaceIO {
  /** Write a UTF-8 file, creating parents. */
  write: (path: string, text: string) => Promise<void>
  /** Read a file, or `null` when it does not exist. */
  read: (path: string) => Promise<string | null>
  /** Names in the workspace root, sorted. */
  listRoot: () => Promise<string[]>
}

/**
 * File access for checks that are about something else (lifecycle,
 * snapshots): `fs` when advertised, otherwise `exec` with `cat`/`printf`.
 * @returns `null` when the provider has neither.
 */
export function workspaceIO(handle: SandboxHandle, capabilities: SandboxCapabilities): WorkspaceIO | null {
  if (capabilities.fs) {
    return {
      write: (path, text) => handle.fs.write(path, text),
      read: async (path) => ((await handle.fs.exists(path)) ? handle.fs.read(path) : null),
      listRoot: async () => (await handle.fs.list()).map((entry) => entry.name).sort(),
    }
  }
  if (capabilities.exec) {
    return {
      write: async (path, text) => {
        const dir = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '.'
        await sh(handle, `mkdir -p ${q(dir)} && printf '%s' ${q(text)} > ${q(path)}`)
      },
      read: async (path) => {
        const result = await handle.process.exec(`cat -- ${q(path)}`)
        return result.exitCode === 0 ? result.stdout : null
      },
      listRoot: async () => (await sh(handle, 'ls -A')).stdout.split('\n').filter((line) => line !== '').sort(),
    }
  }
  return null
}

/** A stream being drained in the background, with a way to wait for text. */
export interface StreamReader {
  /** Everything read so far. */
  text: () => string
  /** Resolves once the text read so far matches `pattern`; rejects naming `rule` if the stream ends first or it hangs. */
  until: (pattern: string | RegExp, rule: string) => Promise<RegExpMatchArray | string>
  /** Resolves with the whole text when the stream ends. */
  done: Promise<string>
}

/**
 * Start draining an async iterable of text at once (so the process never
 * blocks on a full pipe), keeping the text for later assertions.
 */
export function readStream(stream: AsyncIterable<string>, label: string): StreamReader {
  let text = ''
  let ended = false
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const waiter of [...waiters]) waiter()
  }
  const done = (async () => {
    try {
      for await (const chunk of stream) {
        if (typeof chunk !== 'string') {
          violation(`SpawnedProcess.${label} yields UTF-8 text chunks (strings)`, `got a chunk of type ${typeof chunk}`)
        }
        text += chunk
        notify()
      }
      return text
    } finally {
      ended = true
      notify()
    }
  })()
  // The stream's own failure is reported through `done` or `until`; keep it from surfacing as unhandled.
  done.catch(() => undefined)
  const match = (pattern: string | RegExp) => (typeof pattern === 'string' ? (text.includes(pattern) ? pattern : null) : text.match(pattern))
  return {
    text: () => text,
    done,
    until: (pattern, rule) => {
      const appeared = new Promise<RegExpMatchArray | string>((resolve, reject) => {
        const check = () => {
          const found = match(pattern)
          if (found !== null) {
            waiters.delete(check)
            resolve(found)
          } else if (ended) {
            waiters.delete(check)
            done.then(() => reject(violationError(rule, `${label} ended before ${String(pattern)} appeared; it contained ${preview(text, 400)}`)), reject)
          }
        }
        waiters.add(check)
        check()
      })
      return within(appeared, rule)
    },
  }
}

/**
 * A shell script printing each of `pids` that still runs, one a line; zombies
 * have exited and do not count. Needs only `kill -0` and `sed` (BusyBox is fine).
 */
export function aliveScript(pids: readonly string[]): string {
  return [
    `for p in ${pids.map(q).join(' ')}; do`,
    '  if kill -0 "$p" 2>/dev/null; then',
    '    state=$(sed -n "s/^[0-9]* (.*) \\([A-Za-z]\\).*/\\1/p" "/proc/$p/stat" 2>/dev/null)',
    '    [ "$state" = Z ] || [ "$state" = X ] || echo "$p"',
    '  fi',
    'done',
  ].join('\n')
}
