/**
 * The `@cloudflare/sandbox` calls one sandbox needs. A fresh stub per call
 * (`getSandbox` is local and cheap), because Workers forbids using an I/O
 * object of one request from another, and a handle outlives requests. Owns
 * the pool of sessions short commands run in (commands in one session run
 * one after another, so a kill must never queue behind the exec it stops)
 * and the mapping of SDK failures (errors.ts), and the wake check: a sandbox
 * idle for its `sleepAfter` may have lost its container, so its next call
 * first asks the container, bounded by `timeoutMs`, instead of leaving the
 * wait to the SDK's retries (about 150 s). Never passes an AbortSignal or
 * the SDK's `timeout` (neither stops a command: docs/design/cloudflare.md 3, 8).
 */
import { getSandbox } from '@cloudflare/sandbox'
import type { SandboxOperationErrorReason } from '@tanstack/ai-sandbox'
import { idleLimitMs, type ResolvedCloudflareConfig } from './config.js'
import { isSessionGone, operationError, sdkError } from './errors.js'

/** What a command run to its end returned. */
export interface CommandResult {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

/** The slice of a process record the provider reads. */
export interface ProcessRecord {
  readonly status: string
  readonly exitCode?: number | null
}

/** The part of the SDK's sandbox stub (as `getSandbox` returns it) the provider calls. */
interface SdkSession {
  exec: (command: string) => Promise<{ exitCode: number; stdout: string; stderr: string }>
}
interface SdkSandbox {
  exec: (command: string) => Promise<{ exitCode: number; stdout: string; stderr: string }>
  createSession: (options: { id: string }) => Promise<SdkSession>
  getSession: (id: string) => Promise<SdkSession>
  startProcess: (command: string, options: { processId: string }) => Promise<{ id: string; pid?: number }>
  streamProcessLogs: (processId: string) => Promise<ReadableStream<Uint8Array>>
  getProcess: (processId: string) => Promise<ProcessRecord | null>
  killProcess: (processId: string) => Promise<void>
  writeFile: (path: string, content: string, options: { encoding: 'base64' }) => Promise<unknown>
  readFile: (path: string, options: { encoding: 'base64' }) => Promise<{ content: string }>
  deleteFile: (path: string) => Promise<unknown>
  exposePort: (port: number, options: { hostname: string }) => Promise<{ url: string; port: number }>
  destroy: () => Promise<void>
}

/** Idle sessions kept for reuse. */
const POOL_SIZE = 4

/** What the wake check runs and what it must print while the sandbox is the one created (its marker). */
export interface WakeCheck {
  readonly command: string
  readonly expect: string
  /** The error of a container that answered without the marker (restarted empty). */
  readonly gone: (what: string) => Error
}

/** The SDK access of one sandbox. */
export class Toolbox {
  /** Session ids this toolbox made that no command uses now. */
  private readonly idle: string[] = []
  private sessionSeq = 0
  private readonly tag = Math.random().toString(36).slice(2, 10)
  /** When the container last answered, ms since the epoch. */
  private answeredAt = Date.now()
  private waking: Promise<void> | undefined
  /** Set once the sandbox is prepared; without it there is nothing to check. */
  wakeCheck: WakeCheck | undefined

  constructor(
    readonly id: string,
    private readonly config: ResolvedCloudflareConfig,
  ) {}

  /**
   * Before a call: when the sandbox sat idle for its `sleepAfter` (and
   * `keepAlive` is off), Cloudflare may have stopped the container, and the
   * call would start a new one; ask it for the marker first, within
   * `timeoutMs`. Calls that arrive meanwhile wait for the same check.
   * @throws SandboxOperationError `not-found` (restarted empty) or `unreachable` (no answer within `timeoutMs`).
   */
  private async wake(what: string): Promise<void> {
    const check = this.wakeCheck
    if (!check || this.config.keepAlive || Date.now() - this.answeredAt < idleLimitMs(this.config)) return
    this.waking ??= this.checkAwake(check, what).finally(() => (this.waking = undefined))
    await this.waking
  }

  private async checkAwake(check: WakeCheck, what: string): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            operationError(
              'unreachable',
              `${what}: sandbox ${this.id} sat idle longer than sleepAfter, so Cloudflare may have stopped its container, and the container did not answer within ${this.config.timeoutMs} ms. Retry; to keep a sandbox up while nothing calls it, raise cloudflareSandbox({ sleepAfter }) or set keepAlive: true.`,
            ),
          ),
        this.config.timeoutMs,
      )
    })
    let answer: { stdout: string }
    try {
      answer = await Promise.race([this.sandbox().exec(check.command), deadline])
    } catch (error) {
      throw sdkError('unreachable', what, error, this.id)
    } finally {
      clearTimeout(timer)
    }
    if ((answer.stdout ?? '').trim() !== check.expect) throw check.gone(what)
    this.answered()
  }

  private answered(): void {
    this.answeredAt = Date.now()
  }

  /** A stub of the sandbox's Durable Object, made in the current request. */
  sandbox(): SdkSandbox {
    return getSandbox(this.config.binding as never, this.id, {
      transport: 'http',
      normalizeId: true,
      keepAlive: this.config.keepAlive,
      // keepAlive wins: the idle time is not sent at all then (config.ts documents sleepAfter as ignored).
      ...(this.config.sleepAfter !== undefined && !this.config.keepAlive ? { sleepAfter: this.config.sleepAfter } : {}),
    }) as unknown as SdkSandbox
  }

  /**
   * Run `command` in a pooled session of the provider's own and wait for its
   * end. A session the container forgot is replaced once.
   * @throws SandboxError from {@link sdkError} (`reason` as given otherwise).
   */
  async run(command: string, what: string, reason: SandboxOperationErrorReason = 'exec-failed'): Promise<CommandResult> {
    await this.wake(what)
    const sandbox = this.sandbox()
    for (let attempt = 0; ; attempt++) {
      let session: string
      try {
        session = await this.acquire(sandbox)
      } catch (error) {
        throw sdkError(reason, what, error, this.id)
      }
      try {
        const handle = await sandbox.getSession(session)
        let result: Awaited<ReturnType<SdkSession['exec']>>
        try {
          result = await handle.exec(command)
        } finally {
          disposeRpcResult(handle)
        }
        this.answered()
        this.release(session)
        return { exitCode: result.exitCode ?? 0, stdout: result.stdout ?? '', stderr: result.stderr ?? '' }
      } catch (error) {
        if (attempt === 0 && isSessionGone(error)) continue
        throw sdkError(reason, what, error, this.id)
      }
    }
  }

  /** Start `command` as a background process named `processId`. */
  async start(command: string, processId: string, what: string): Promise<void> {
    await this.wake(what)
    try {
      disposeRpcResult(await this.sandbox().startProcess(command, { processId }))
      this.answered()
    } catch (error) {
      throw sdkError('spawn-failed', what, error, this.id)
    }
  }

  /** Open the log stream of a background process (it replays everything from the start). */
  async logs(processId: string, what: string): Promise<ReadableStream<Uint8Array>> {
    await this.wake(what)
    try {
      return await this.sandbox().streamProcessLogs(processId)
    } catch (error) {
      throw sdkError('spawn-failed', what, error, this.id)
    }
  }

  /** The process record, or `null` when the container does not know the process (it ended and was cleaned up, or the container is new). */
  async process(processId: string, what: string): Promise<ProcessRecord | null> {
    try {
      const record = await this.sandbox().getProcess(processId)
      this.answered()
      const result = record ? { status: String(record.status), exitCode: record.exitCode ?? null } : null
      disposeRpcResult(record)
      return result
    } catch (error) {
      throw sdkError('spawn-failed', what, error, this.id)
    }
  }

  /** Ask the control server to kill a background process (it cannot choose a signal). A process already gone is fine. */
  async killProcess(processId: string): Promise<void> {
    await this.sandbox()
      .killProcess(processId)
      .catch(() => undefined) // already gone: nothing to kill (ProcessNotFoundError), the first net did the work
  }

  /** Write bytes (base64 on the wire, byte-exact) to an absolute path. */
  async write(path: string, base64: string, what: string, reason: SandboxOperationErrorReason = 'fs-failed'): Promise<void> {
    await this.wake(what)
    try {
      await this.sandbox().writeFile(path, base64, { encoding: 'base64' })
      this.answered()
    } catch (error) {
      throw sdkError(reason, what, error, this.id)
    }
  }

  /** Read a file's bytes as base64. */
  async read(path: string, what: string): Promise<string> {
    await this.wake(what)
    try {
      const { content } = await this.sandbox().readFile(path, { encoding: 'base64' })
      this.answered()
      return content
    } catch (error) {
      throw sdkError('fs-failed', what, error, this.id)
    }
  }

  /** A preview URL for `port` under `hostname`. */
  async expose(port: number, hostname: string, what: string): Promise<string> {
    await this.wake(what)
    try {
      return (await this.sandbox().exposePort(port, { hostname })).url
    } catch (error) {
      throw sdkError('exec-failed', what, error, this.id)
    }
  }

  /** Stop and remove the container (the Durable Object and its storage stay; the next call would start an empty one). */
  async destroy(what: string): Promise<void> {
    try {
      await this.sandbox().destroy()
    } catch (error) {
      throw sdkError('exec-failed', what, error, this.id)
    }
  }

  private async acquire(sandbox: SdkSandbox): Promise<string> {
    const pooled = this.idle.pop()
    if (pooled) return pooled
    const id = `tanstack-${this.tag}-${++this.sessionSeq}`
    try {
      disposeRpcResult(await sandbox.createSession({ id }))
    } catch (error) {
      if (!/SessionAlreadyExists/i.test(String(error instanceof Error ? error.message : error))) throw error
    }
    return id
  }

  private release(session: string): void {
    if (this.idle.length < POOL_SIZE) this.idle.push(session)
  }
}

/**
 * Release what a Durable Object RPC call returned. The SDK's `Process` and
 * `ExecutionSession` have methods, so over RPC each arrives as a stub that holds the call open until
 * disposed (workerd warns "An RPC stub was not disposed properly" otherwise).
 * A plain value, or one in the same isolate, has no dispose: nothing to do.
 */
function disposeRpcResult(value: unknown): void {
  const dispose = typeof Symbol.dispose === 'symbol' && typeof value === 'object' && value !== null ? (value as Record<symbol, unknown>)[Symbol.dispose] : undefined
  if (typeof dispose !== 'function') return
  try {
    dispose.call(value)
  } catch {
    // already released
  }
}
