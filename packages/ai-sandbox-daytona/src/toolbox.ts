/**
 * The toolbox calls one sandbox needs, over the SDK: short commands run to
 * their end in pooled sessions (stdout and stderr apart), long ones started
 * in a session of their own and followed over the log WebSocket, and files
 * moved byte-exact through the files API. Owns the session pool and every
 * background cleanup, which `drain()` waits for. Maps SDK failures to core
 * errors (errors.ts). Design notes: docs/design/daytona.md (sections 5, 6, 11)
 */
import { randomUUID } from 'node:crypto'
import type { Sandbox } from '@daytona/sdk'
import { shellQuote } from '@tanstack/ai-sandbox'
import { apiError, isNotFound } from './errors.js'

/** What a command run to its end returned. */
export interface CommandResult {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

/** Idle sessions kept for reuse, and how many commands one session runs before it is replaced. */
const POOL_SIZE = 4
const SESSION_USES = 200

/** A pooled session: its id and how many commands it ran. */
interface PooledSession {
  readonly id: string
  uses: number
}

/** The toolbox of one sandbox. */
export class Toolbox {
  private readonly idle: PooledSession[] = []
  private readonly background = new Set<Promise<unknown>>()
  /** Files to delete, removed by the next command (no round trip of their own). */
  private readonly removals: string[] = []

  constructor(
    readonly sandbox: Sandbox,
    readonly id: string,
  ) {}

  /**
   * Run `command` in a pooled session and wait for its end.
   * @throws SandboxError from {@link apiError} (`reason` as given for a failure that is not auth, rate, reachability or a missing sandbox).
   */
  async run(command: string, what: string, reason: Parameters<typeof apiError>[0] = 'exec-failed'): Promise<CommandResult> {
    const removing = this.removals.splice(0)
    if (removing.length > 0) command = `rm -f -- ${removing.map(shellQuote).join(' ')} 2>/dev/null; ${command}`
    let session = await this.acquire(what, reason)
    let result
    try {
      result = await this.sandbox.process.executeSessionCommand(session.id, { command, runAsync: false })
    } catch (error) {
      this.dropSession(session.id)
      // A pooled session the daemon no longer knows (it restarted): once more in a new one.
      if (!isNotFound(error) || session.uses === 0) throw apiError(reason, what, error, this.id)
      session = await this.acquire(what, reason, true)
      try {
        result = await this.sandbox.process.executeSessionCommand(session.id, { command, runAsync: false })
      } catch (retried) {
        this.dropSession(session.id)
        throw apiError(reason, what, retried, this.id)
      }
    }
    this.release(session)
    return { exitCode: result.exitCode ?? 0, stdout: result.stdout ?? '', stderr: result.stderr ?? '' }
  }

  /** Start `command` in a fresh session; resolves with the session and command ids once the daemon took it. */
  async start(command: string, what: string): Promise<{ sessionId: string; commandId: string }> {
    const sessionId = `tanstack-${randomUUID()}`
    try {
      await this.sandbox.process.createSession(sessionId)
    } catch (error) {
      throw apiError('spawn-failed', what, error, this.id)
    }
    try {
      const started = await this.sandbox.process.executeSessionCommand(sessionId, { command, runAsync: true })
      if (!started.cmdId) throw new Error('the daemon returned no command id')
      return { sessionId, commandId: started.cmdId }
    } catch (error) {
      this.dropSession(sessionId)
      throw apiError('spawn-failed', what, error, this.id)
    }
  }

  /**
   * Stream a started command's output until the daemon closes the log
   * socket. Resolving does not mean the command ended: a dropped socket
   * resolves the same way (check {@link exitCodeOf}).
   */
  follow(sessionId: string, commandId: string, onStdout: (text: string) => void, onStderr: (text: string) => void): Promise<void> {
    return this.sandbox.process.getSessionCommandLogs(sessionId, commandId, onStdout, onStderr)
  }

  /** The exit code of a started command; `undefined` while it runs. */
  async exitCodeOf(sessionId: string, commandId: string, what: string): Promise<number | undefined> {
    try {
      const command = await this.sandbox.process.getSessionCommand(sessionId, commandId)
      return command.exitCode ?? undefined
    } catch (error) {
      throw apiError('exec-failed', what, error, this.id)
    }
  }

  /** Upload files (bytes or text) in one request. */
  async upload(files: { path: string; data: Uint8Array | string }[], what: string, reason: Parameters<typeof apiError>[0] = 'exec-failed'): Promise<void> {
    try {
      await this.sandbox.fs.uploadFiles(files.map((file) => ({ source: typeof file.data === 'string' ? Buffer.from(file.data, 'utf8') : Buffer.from(file.data.buffer, file.data.byteOffset, file.data.byteLength), destination: file.path })))
    } catch (error) {
      throw apiError(reason, what, error, this.id)
    }
  }

  /** Download one file's exact bytes. */
  async download(path: string, what: string): Promise<Buffer> {
    try {
      return await this.sandbox.fs.downloadFile(path)
    } catch (error) {
      throw apiError('fs-failed', what, error, this.id)
    }
  }

  /** Delete `path` with the next command this toolbox runs (or at {@link drain}). */
  removeLater(path: string): void {
    this.removals.push(path)
  }

  /** Delete a session in the background (its commands ended or are abandoned). */
  dropSession(sessionId: string): void {
    this.track(this.sandbox.process.deleteSession(sessionId).catch(() => undefined))
  }

  /** Delete what is left to delete, wait for every background cleanup, then delete the pooled sessions. */
  async drain(): Promise<void> {
    if (this.removals.length > 0) await this.run('true', 'cleanup').catch(() => undefined)
    while (this.background.size > 0) await Promise.all([...this.background])
    const sessions = this.idle.splice(0)
    await Promise.all(sessions.map((session) => this.sandbox.process.deleteSession(session.id).catch(() => undefined)))
  }

  /** Forget every session without calling the daemon (the sandbox is gone). */
  forget(): void {
    this.idle.splice(0)
  }

  private async acquire(what: string, reason: Parameters<typeof apiError>[0], fresh = false): Promise<PooledSession> {
    const pooled = fresh ? undefined : this.idle.pop()
    if (pooled) return pooled
    const session = { id: `tanstack-${randomUUID()}`, uses: 0 }
    try {
      await this.sandbox.process.createSession(session.id)
    } catch (error) {
      throw apiError(reason, what, error, this.id)
    }
    return session
  }

  private release(session: PooledSession): void {
    session.uses += 1
    if (session.uses < SESSION_USES && this.idle.length < POOL_SIZE) this.idle.push(session)
    else this.dropSession(session.id)
  }

  private track(promise: Promise<unknown>): void {
    this.background.add(promise)
    void promise.finally(() => this.background.delete(promise))
  }
}
