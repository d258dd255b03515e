/**
 * Background processes, sandbox-wide (the process routes take no session):
 * each is launched from a session shell into its own process group, its
 * stdout and stderr files are read every few milliseconds into line events,
 * and its exit code comes from a file its wrapper writes. Owns the records
 * and the listeners of open streams. Invariant: a record ends exactly once
 * (exit file, or the wrapper gone), and every listener then gets `exit`.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { StandinError, now } from './http.js'
import type { Session, CommandOptions } from './sessions.js'
import { alive, killTree, LineSplitter } from './shell.js'
import type { ProcessDto, ProcessStatus } from './wire.js'

/** What a stream listener hears: output lines, then the end. */
export type ProcessListener = (event: { type: 'stdout' | 'stderr'; data: string } | { type: 'exit'; exitCode: number; status: ProcessStatus }) => void

const POLL_MS = 20
const PROCESSES = '/tmp/.cloudflare-standin/processes'
let counter = 0

/** Reads the bytes appended to a file since the last call. */
class Tail {
  private offset = 0
  private readonly lines = new LineSplitter()
  constructor(private readonly path: string) {}
  read(final: boolean): string[] {
    const out: string[] = []
    let fd: number
    try {
      fd = openSync(this.path, 'r')
    } catch {
      return final ? this.lines.flush() : []
    }
    try {
      const buffer = Buffer.alloc(64 * 1024)
      for (let n; (n = readSync(fd, buffer, 0, buffer.length, this.offset)) > 0; ) {
        this.offset += n
        out.push(...this.lines.push(buffer.subarray(0, n)))
      }
    } finally {
      closeSync(fd)
    }
    if (final) out.push(...this.lines.flush())
    return out
  }
}

/** One background process. */
export class ProcessRecord {
  status: ProcessStatus = 'running'
  exitCode: number | undefined
  endTime: string | undefined
  stdout = ''
  stderr = ''
  readonly startTime = now()
  private readonly listeners = new Set<ProcessListener>()
  private readonly tails: { stdout: Tail; stderr: Tail }
  private readonly timer: NodeJS.Timeout
  private killing: Promise<void> | undefined
  private killRequested = false
  private readonly done: Promise<void>
  private finish: () => void = () => undefined

  constructor(
    readonly id: string,
    readonly command: string,
    readonly pid: number,
    private readonly exitFile: string,
    files: { out: string; err: string },
    private readonly dir: string,
  ) {
    this.tails = { stdout: new Tail(files.out), stderr: new Tail(files.err) }
    this.done = new Promise((resolve) => (this.finish = resolve))
    this.timer = setInterval(() => this.poll(), POLL_MS)
  }

  /** The record as the process routes answer it. */
  dto(): ProcessDto {
    return { id: this.id, pid: this.pid, command: this.command, status: this.status, startTime: this.startTime, ...(this.endTime ? { endTime: this.endTime } : {}), ...(this.exitCode !== undefined ? { exitCode: this.exitCode } : {}) }
  }

  get running(): boolean {
    return this.endTime === undefined
  }

  /** Listen to what comes next; returns the unsubscribe function. */
  listen(listener: ProcessListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** SIGTERM the whole tree, SIGKILL after a grace period; resolves once the record has ended. */
  kill(): Promise<void> {
    this.killing ??= (async () => {
      if (this.running) {
        this.killRequested = true
        const signal = await killTree(this.pid)
        this.poll(signal === 'SIGKILL' ? 137 : 143, 'killed')
      }
      await this.done
    })()
    return this.killing
  }

  /** Stop polling and forget its files (the server is stopping, or the record is dropped). */
  dispose(): void {
    clearInterval(this.timer)
    rmSync(this.dir, { recursive: true, force: true })
  }

  private poll(forcedCode?: number, forcedStatus?: ProcessStatus): void {
    if (!this.running) return
    const exited = existsSync(this.exitFile)
    const gone = exited || forcedCode !== undefined || !alive(this.pid)
    this.emit('stdout', this.tails.stdout.read(gone))
    this.emit('stderr', this.tails.stderr.read(gone))
    if (!gone) return
    const recorded = exited ? Number(readFileSync(this.exitFile, 'utf8')) : undefined
    this.exitCode = recorded ?? forcedCode ?? 137
    this.status = forcedStatus ?? (this.killRequested ? 'killed' : exited ? (this.exitCode === 0 ? 'completed' : 'failed') : 'killed')
    this.endTime = now()
    clearInterval(this.timer)
    for (const listener of this.listeners) listener({ type: 'exit', exitCode: this.exitCode, status: this.status })
    this.listeners.clear()
    this.finish()
  }

  private emit(type: 'stdout' | 'stderr', lines: string[]): void {
    for (const data of lines) {
      this[type] += data
      for (const listener of this.listeners) listener({ type, data })
    }
  }
}

/** The processes of this container, by id. */
export class ProcessStore {
  private readonly records = new Map<string, ProcessRecord>()

  /** Launch `command` from `session`; a running process with the same id is a 409. */
  async start(session: Session, command: string, options: CommandOptions & { processId?: string | undefined }): Promise<ProcessRecord> {
    const id = options.processId ?? `proc_${Date.now()}_${(++counter).toString(36)}`
    const previous = this.records.get(id)
    if (previous?.running) throw new StandinError('PROCESS_ERROR', `Process ID '${id}' is already in use by a running process`, 409, { processId: id })
    previous?.dispose()
    const dir = join(PROCESSES, `${process.pid}-${++counter}`)
    const launched = await session.launch(command, options, dir)
    const record = new ProcessRecord(id, command, launched.pid, launched.exit, launched, dir)
    this.records.set(id, record)
    return record
  }

  /** The record of `id`, or 404 `PROCESS_NOT_FOUND`. */
  get(id: string): ProcessRecord {
    const record = this.records.get(id)
    if (!record) throw new StandinError('PROCESS_NOT_FOUND', `Process not found: ${id}`, 404, { processId: id })
    return record
  }

  list(): ProcessRecord[] {
    return [...this.records.values()]
  }

  /** Kill every running process; resolves to how many there were. */
  async killAll(): Promise<number> {
    const running = this.list().filter((r) => r.running)
    await Promise.all(running.map((r) => r.kill()))
    return running.length
  }
}
