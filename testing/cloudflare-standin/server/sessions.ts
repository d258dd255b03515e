/**
 * Sessions: one persistent `bash --norc` each, as upstream's server keeps
 * them. A foreground command is sourced in that shell (so `cd` and `export`
 * persist; per-call env and cwd are set around it and restored), with stdin
 * /dev/null and stdout and stderr into files; commands of one session run one
 * at a time, sessions side by side. A background command (process start,
 * streamed exec) is launched from the shell in its own process group, holding
 * the session only until it has started. The shell reports on fd 3.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { StandinError } from './http.js'
import { ENV_NAME, foregroundText, quote, spawnShell } from './shell.js'

/** The session token that asks for a fresh shell per call (`enableDefaultSession: false`). */
export const NO_SESSION = '__DISABLE_SESSION__'
/** Where sessions keep their scratch files. */
const SCRATCH = '/tmp/.cloudflare-standin'
/** The workspace of Cloudflare's image. */
export const WORKSPACE = '/workspace'

/** Per-call options of a command. */
export interface CommandOptions {
  env?: Record<string, string | undefined> | undefined
  cwd?: string | undefined
}

/** A finished foreground command. */
export interface CommandResult {
  exitCode: number
  stdout: string
  stderr: string
}

/** A launched background command: its pid and the files its output and exit code go to. */
export interface Launched {
  pid: number
  out: string
  err: string
  exit: string
}

let counter = 0

/** Shell lines that export per-call env (`undefined` unsets) and remember what was there; and the lines that restore it. */
function envAround(env: CommandOptions['env']): { set: string; restore: string } {
  let set = ''
  let restore = ''
  for (const [name, value] of Object.entries(env ?? {})) {
    if (!ENV_NAME.test(name)) throw new StandinError('VALIDATION_FAILED', `Invalid environment variable name: ${name}`, 400, { name })
    set += `__sb_had_${name}=\${${name}+1}; __sb_old_${name}=\${${name}-}\n`
    set += value === undefined ? `unset ${name}\n` : `export ${name}=${quote(value)}\n`
    restore += `if [ -n "$__sb_had_${name}" ]; then export ${name}="$__sb_old_${name}"; else unset ${name}; fi; unset __sb_had_${name} __sb_old_${name}\n`
  }
  return { set, restore }
}

/** One persistent shell. */
export class Session {
  private readonly shell: ChildProcess
  private readonly dir: string
  private readonly waiting = new Map<string, (value: string) => void>()
  private lock: Promise<unknown> = Promise.resolve()
  private buffered = ''
  /** Set once the shell has exited (the user ran `exit`, or it was closed). */
  ended = false

  constructor(
    readonly id: string,
    options: { env?: Record<string, string | undefined> | undefined; cwd?: string | undefined; commandTimeoutMs?: number | undefined },
  ) {
    this.commandTimeoutMs = options.commandTimeoutMs
    this.dir = join(SCRATCH, `s${process.pid}-${++counter}`)
    mkdirSync(this.dir, { recursive: true })
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' }
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined) delete env[name]
      else env[name] = value
    }
    const wanted = options.cwd ?? WORKSPACE
    const cwd = isDirectory(wanted) ? wanted : (env.HOME ?? '/')
    this.shell = spawnShell(cwd, env)
    this.shell.stdin!.on('error', () => undefined)
    const reports = this.shell.stdio[3] as NodeJS.ReadableStream
    reports.setEncoding('utf8')
    reports.on('data', (text: string) => this.report(text))
    reports.on('end', () => this.terminate())
    this.shell.on('error', () => this.terminate())
  }

  readonly commandTimeoutMs: number | undefined

  /** Run a foreground command in this shell, after the commands before it. */
  run(command: string, options: CommandOptions = {}): Promise<CommandResult> {
    return this.exclusive(async () => {
      const n = ++counter
      const file = (suffix: string) => join(this.dir, `${n}.${suffix}`)
      const { set, restore } = envAround(options.env)
      writeFileSync(file('cmd'), command)
      writeFileSync(file('out'), '')
      writeFileSync(file('err'), '')
      const cwd = options.cwd === undefined ? '' : `__sb_pwd=$PWD; cd -- ${quote(options.cwd)} 2>${quote(file('err'))} || __sb_ec=1\n`
      const back = options.cwd === undefined ? '' : `cd -- "$__sb_pwd" 2>/dev/null; unset __sb_pwd\n`
      const script =
        `__sb_ec=0\n${cwd}${set}` +
        `if [ "$__sb_ec" = 0 ]; then { . ${quote(file('cmd'))}; } </dev/null >${quote(file('out'))} 2>${quote(file('err'))} 3>&-; __sb_ec=$?; fi\n` +
        `${restore}${back}printf '%s %s\\n' ${n} "$__sb_ec" >&3\n`
      writeFileSync(file('run'), script)
      const code = await this.send(String(n), `. ${quote(file('run'))}`)
      const result = { exitCode: Number(code), stdout: foregroundText(readFileSync(file('out'))), stderr: foregroundText(readFileSync(file('err'))) }
      for (const suffix of ['cmd', 'run', 'out', 'err']) rmSync(file(suffix), { force: true })
      return result
    })
  }

  /**
   * Launch a background command from this shell: a new process group
   * (setsid) inheriting the shell's exported env and cwd, plus per-call env
   * and cwd; `exit` gets its exit code (also when it dies of SIGTERM).
   */
  launch(command: string, options: CommandOptions, dir: string): Promise<Launched> {
    return this.exclusive(async () => {
      const n = ++counter
      mkdirSync(dir, { recursive: true })
      const file = (name: string) => join(dir, name)
      const { set } = envAround(options.env)
      writeFileSync(file('cmd'), command)
      writeFileSync(file('out'), '')
      writeFileSync(file('err'), '')
      const exit = file('exit')
      const cd = options.cwd === undefined ? '' : `cd -- ${quote(options.cwd)} || { printf 1 >${quote(exit)}; exit 1; }\n`
      // The trap is a handler, not an ignore: children still die of SIGTERM, and this shell then records 143.
      writeFileSync(file('bg'), `trap : TERM\n${cd}${set}bash --norc ${quote(file('cmd'))}\n__sb_ec=$?\nprintf '%s' "$__sb_ec" >${quote(exit + '.tmp')} && mv -f ${quote(exit + '.tmp')} ${quote(exit)}\n`)
      const launcher = `setsid bash --norc ${quote(file('bg'))} </dev/null >${quote(file('out'))} 2>${quote(file('err'))} 3>&- &\nprintf '%s %s\\n' ${n} "$!" >&3\n`
      writeFileSync(file('launch'), launcher)
      const pid = Number(await this.send(String(n), `. ${quote(file('launch'))}`))
      return { pid, out: file('out'), err: file('err'), exit }
    })
  }

  /** End the shell (background commands it launched keep running). */
  close(): void {
    if (!this.ended) this.shell.stdin!.end('exit 0\n')
    this.terminate()
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const result = this.lock.then(() => {
      if (this.ended) throw terminated(this.id)
      return work()
    })
    this.lock = result.catch(() => undefined)
    return result
  }

  private send(token: string, line: string): Promise<string> {
    return new Promise((resolve, reject) => {
      if (this.ended) return reject(terminated(this.id))
      this.waiting.set(token, resolve)
      this.rejectPending = reject
      this.shell.stdin!.write(`${line}\n`)
    })
  }

  /** Rejects the one command in flight (commands are serialized, so there is at most one). */
  private rejectPending: (error: Error) => void = () => undefined

  private report(text: string): void {
    this.buffered += text
    let end: number
    while ((end = this.buffered.indexOf('\n')) >= 0) {
      const [token, value = ''] = this.buffered.slice(0, end).split(' ')
      this.buffered = this.buffered.slice(end + 1)
      const resolve = this.waiting.get(token!)
      this.waiting.delete(token!)
      resolve?.(value)
    }
  }

  private terminate(): void {
    if (this.ended) return
    this.ended = true
    this.rejectPending(terminated(this.id))
    this.waiting.clear()
    rmSync(this.dir, { recursive: true, force: true })
  }
}

function terminated(id: string): StandinError {
  return new StandinError('SESSION_TERMINATED', `Session '${id}' shell terminated unexpectedly`, 410, { sessionId: id, exitCode: null })
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** The sessions by id; a command naming an unknown id creates it, `__DISABLE_SESSION__` gets a shell of its own. */
export class SessionStore {
  private readonly sessions = new Map<string, Session>()

  /** Create a session; 409 `SESSION_ALREADY_EXISTS` when the id is live. */
  create(id: string, options: ConstructorParameters<typeof Session>[1]): Session {
    const existing = this.sessions.get(id)
    if (existing && !existing.ended) throw new StandinError('SESSION_ALREADY_EXISTS', `Session '${id}' already exists`, 409, { sessionId: id })
    const session = new Session(id, options)
    this.sessions.set(id, session)
    return session
  }

  /** Delete a session; false when there was none. */
  delete(id: string): boolean {
    const session = this.sessions.get(id)
    this.sessions.delete(id)
    session?.close()
    return session !== undefined
  }

  /**
   * Run `work` with the session `id` (created when unknown, recreated when its
   * shell ended), or with a one-off shell closed afterwards.
   */
  async with<T>(id: string | undefined, work: (session: Session) => Promise<T>): Promise<T> {
    if (id === undefined || id === NO_SESSION) {
      const session = new Session(NO_SESSION, {})
      try {
        return await work(session)
      } finally {
        session.close()
      }
    }
    let session = this.sessions.get(id)
    if (session === undefined || session.ended) session = this.create(id, {})
    return work(session)
  }

  /** Close every shell (the server is stopping). */
  closeAll(): void {
    for (const session of this.sessions.values()) session.close()
    this.sessions.clear()
  }
}
