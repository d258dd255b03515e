/**
 * The `@cloudflare/sandbox` calls one sandbox needs. A fresh stub per call
 * (`getSandbox` is local and cheap), because Workers forbids using an I/O
 * object of one request from another, and a handle outlives requests. Owns
 * the pool of sessions short commands run in (commands in one session run
 * one after another, so a kill must never queue behind the exec it stops)
 * and the mapping of SDK failures (errors.ts). Never passes an AbortSignal or
 * the SDK's `timeout` (neither stops a command: docs/design/cloudflare.md 3, 8).
 */
import { getSandbox } from '@cloudflare/sandbox'
import type { SandboxOperationErrorReason } from '@tanstack/ai-sandbox'
import type { ResolvedCloudflareConfig } from './config.js'
import { isSessionGone, sdkError } from './errors.js'

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

/** The SDK access of one sandbox. */
export class Toolbox {
  /** Session ids this toolbox made that no command uses now. */
  private readonly idle: string[] = []
  private sessionSeq = 0
  private readonly tag = Math.random().toString(36).slice(2, 10)

  constructor(
    readonly id: string,
    private readonly config: ResolvedCloudflareConfig,
  ) {}

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
    const sandbox = this.sandbox()
    for (let attempt = 0; ; attempt++) {
      let session: string
      try {
        session = await this.acquire(sandbox)
      } catch (error) {
        throw sdkError(reason, what, error, this.id)
      }
      try {
        const result = await (await sandbox.getSession(session)).exec(command)
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
    try {
      await this.sandbox().startProcess(command, { processId })
    } catch (error) {
      throw sdkError('spawn-failed', what, error, this.id)
    }
  }

  /** Open the log stream of a background process (it replays everything from the start). */
  async logs(processId: string, what: string): Promise<ReadableStream<Uint8Array>> {
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
      return record ? { status: String(record.status), exitCode: record.exitCode ?? null } : null
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
    try {
      await this.sandbox().writeFile(path, base64, { encoding: 'base64' })
    } catch (error) {
      throw sdkError(reason, what, error, this.id)
    }
  }

  /** Read a file's bytes as base64. */
  async read(path: string, what: string): Promise<string> {
    try {
      return (await this.sandbox().readFile(path, { encoding: 'base64' })).content
    } catch (error) {
      throw sdkError('fs-failed', what, error, this.id)
    }
  }

  /** A preview URL for `port` under `hostname`. */
  async expose(port: number, hostname: string, what: string): Promise<string> {
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
      await sandbox.createSession({ id })
    } catch (error) {
      if (!/SessionAlreadyExists/i.test(String(error instanceof Error ? error.message : error))) throw error
    }
    return id
  }

  private release(session: string): void {
    if (this.idle.length < POOL_SIZE) this.idle.push(session)
  }
}
