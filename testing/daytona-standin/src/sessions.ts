/**
 * The toolbox session routes (`/toolbox/{id}/process/session…`): sessions,
 * their commands run sync or async as `docker exec`s with stdout and stderr
 * kept apart, logs over REST and over the follow WebSocket (binary frames,
 * `01 01 01` before stdout bytes, `02 02 02` before stderr), stdin input, and
 * delete killing the process groups of the commands still running.
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Context, Hono } from 'hono'
import type { Command, CreateSessionRequest, Session, SessionCommandLogsResponse, SessionExecuteRequest, SessionExecuteResponse, SessionSendInputRequest } from '@daytona/toolbox-api-client'
import { WebSocketServer } from 'ws'
import type { WebSocket } from 'ws'
import type { LiveExec, SandboxEngine } from './engine.js'
import { StandinError } from './errors.js'
import type { SandboxRecord } from './control.js'

/** Where a session keeps its cwd, exported env and the pids of its running commands, in the container. */
const STATE_ROOT = '/tmp/.daytona-standin/sessions'

/**
 * The shell around each command (`sh -c WRAPPER sh <state dir> <cmdId> <command>`):
 * it records its pid (the process group, under `setsid -w`), restores the
 * session's cwd and exported variables, runs the command, and saves them back on exit.
 */
const WRAPPER = [
  '__standin_d=$1; __standin_c=$2; echo $$ > "$__standin_d/$__standin_c.pid"',
  '[ -f "$__standin_d/env" ] && . "$__standin_d/env"',
  '[ -f "$__standin_d/cwd" ] && cd "$(cat "$__standin_d/cwd")" 2>/dev/null',
  'trap \'__standin_x=$?; pwd > "$__standin_d/cwd"; export -p > "$__standin_d/env"; rm -f "$__standin_d/$__standin_c.pid"; exit $__standin_x\' EXIT',
  'eval "$3"',
].join('\n')

/** Kill the process group of every command still running in a session, then remove its state. */
const KILL_SCRIPT = 'for f in "$1"/*.pid; do p=$(cat "$f" 2>/dev/null) && [ -n "$p" ] && kill -9 -$p 2>/dev/null; done; rm -rf -- "$1"'

/** The socket markers that tell the SDK which stream the following bytes belong to. */
const MARKERS = { 1: Buffer.from([1, 1, 1]), 2: Buffer.from([2, 2, 2]) } as const

/** One command of a session: its output so far, in arrival order, and its exit code once it ended. */
class SessionCommand {
  readonly parts: { stream: 1 | 2; bytes: Buffer }[] = []
  readonly followers = new Set<(stream: 1 | 2, bytes: Buffer) => void>()
  exitCode: number | undefined
  live: LiveExec | undefined

  constructor(
    readonly id: string,
    readonly command: string,
  ) {}

  push(stream: 1 | 2, bytes: Buffer): void {
    this.parts.push({ stream, bytes })
    for (const follower of this.followers) follower(stream, bytes)
  }

  logs(): SessionCommandLogsResponse {
    const of = (stream: 1 | 2) => Buffer.concat(this.parts.filter((p) => p.stream === stream).map((p) => p.bytes)).toString('utf8')
    return { output: Buffer.concat(this.parts.map((p) => p.bytes)).toString('utf8'), stdout: of(1), stderr: of(2) }
  }

  dto(): Command {
    return { id: this.id, command: this.command, ...(this.exitCode !== undefined ? { exitCode: this.exitCode } : {}) }
  }
}

/** A session: its commands by id, in the order they were run. */
interface SessionState {
  id: string
  dir: string
  commands: Map<string, SessionCommand>
}

/** The sessions of every sandbox, by sandbox id then session id. */
export class SessionStore {
  private readonly bySandbox = new Map<string, Map<string, SessionState>>()

  /** The sessions of a sandbox (created empty). */
  of(sandboxId: string): Map<string, SessionState> {
    let sessions = this.bySandbox.get(sandboxId)
    if (!sessions) this.bySandbox.set(sandboxId, (sessions = new Map()))
    return sessions
  }

  /** A session, or the daemon's 404. */
  session(sandboxId: string, sessionId: string): SessionState {
    const session = this.of(sandboxId).get(sessionId)
    if (!session) throw new StandinError(404, `session ${sessionId} not found`)
    return session
  }

  /** A command of a session, or a 404. */
  command(sandboxId: string, sessionId: string, cmdId: string): SessionCommand {
    const command = this.session(sandboxId, sessionId).commands.get(cmdId)
    if (!command) throw new StandinError(404, `command ${cmdId} not found in session ${sessionId}`)
    return command
  }
}

const sessionDto = (session: SessionState): Session => ({ sessionId: session.id, commands: [...session.commands.values()].map((c) => c.dto()) })

/** Register the session routes on `app`; `started` resolves a request's sandbox, which must be started. */
export function sessionRoutes(app: Hono, engine: SandboxEngine, sessions: SessionStore, started: (c: Context) => SandboxRecord): void {
  const base = '/toolbox/:sandboxId/process/session'

  app.post(base, async (c) => {
    const record = started(c)
    const { sessionId } = (await c.req.json()) as CreateSessionRequest
    if (typeof sessionId !== 'string' || !/^[\w.-]+$/.test(sessionId)) throw new StandinError(400, 'sessionId is required (letters, digits, _ . -)')
    const all = sessions.of(record.dto.id)
    if (all.has(sessionId)) throw new StandinError(409, `session ${sessionId} already exists`)
    const dir = `${STATE_ROOT}/${sessionId}`
    // Emptied first: a sandbox made from a snapshot or fork has its source's state folders in its filesystem.
    const made = await engine.exec(record.containerId, { cmd: ['sh', '-c', 'rm -rf -- "$1" && mkdir -p -- "$1" && chmod 700 -- "$1"', 'sh', dir] })
    if (made.exitCode !== 0) throw new StandinError(500, `creating the session state failed: ${made.stderr.toString('utf8')}`)
    all.set(sessionId, { id: sessionId, dir, commands: new Map() })
    return c.body(null, 201)
  })

  app.get(base, (c) => c.json([...sessions.of(started(c).dto.id).values()].map(sessionDto)))

  app.get(`${base}/:sessionId`, (c) => c.json(sessionDto(sessions.session(started(c).dto.id, c.req.param('sessionId')))))

  app.delete(`${base}/:sessionId`, async (c) => {
    const record = started(c)
    const session = sessions.session(record.dto.id, c.req.param('sessionId'))
    sessions.of(record.dto.id).delete(session.id)
    await engine.exec(record.containerId, { cmd: ['sh', '-c', KILL_SCRIPT, 'sh', session.dir], user: 'root' })
    await Promise.all([...session.commands.values()].map((command) => command.live?.done))
    return c.body(null, 204)
  })

  app.post(`${base}/:sessionId/exec`, async (c) => {
    const record = started(c)
    const session = sessions.session(record.dto.id, c.req.param('sessionId'))
    const body = (await c.req.json()) as SessionExecuteRequest
    if (typeof body.command !== 'string' || body.command === '') throw new StandinError(400, 'command is required')
    const command = new SessionCommand(randomUUID(), body.command)
    session.commands.set(command.id, command)
    const cmd = ['setsid', '-w', 'sh', '-c', WRAPPER, 'sh', session.dir, command.id, body.command]
    command.live = await engine.spawn(record.containerId, { cmd }, (stream, bytes) => command.push(stream, bytes))
    const ended = command.live.done.then((code) => {
      command.exitCode = code
      for (const follower of command.followers) follower(1, Buffer.alloc(0))
    })
    if (body.runAsync ?? body.async) return c.json({ cmdId: command.id } satisfies SessionExecuteResponse)
    await ended
    const response: SessionExecuteResponse = { cmdId: command.id, exitCode: command.exitCode!, ...command.logs() }
    return c.json(response)
  })

  app.get(`${base}/:sessionId/command/:cmdId`, (c) => c.json(sessions.command(started(c).dto.id, c.req.param('sessionId'), c.req.param('cmdId')).dto()))

  app.get(`${base}/:sessionId/command/:cmdId/logs`, (c) => c.json(sessions.command(started(c).dto.id, c.req.param('sessionId'), c.req.param('cmdId')).logs()))

  app.post(`${base}/:sessionId/command/:cmdId/input`, async (c) => {
    const command = sessions.command(started(c).dto.id, c.req.param('sessionId'), c.req.param('cmdId'))
    const { data } = (await c.req.json()) as SessionSendInputRequest
    if (typeof data !== 'string') throw new StandinError(400, 'data is required')
    if (command.exitCode !== undefined) throw new StandinError(400, `command ${command.id} has ended`)
    command.live?.write(data)
    return c.body(null, 200)
  })
}

/** The path of the follow-logs WebSocket: sandbox id, session id, command id. */
const FOLLOW_PATH = /^\/toolbox\/([^/]+)\/process\/session\/([^/]+)\/command\/([^/]+)\/logs$/

/**
 * Handles WebSocket upgrades: the follow-logs socket of a session command
 * (sends what is there, then each chunk as it comes, closes once the command
 * ended); `false` for any other path, which the caller refuses.
 */
export function followLogsUpgrade(sessions: SessionStore, lookup: (sandboxId: string) => SandboxRecord): (request: IncomingMessage, socket: Duplex, head: Buffer) => boolean {
  const server = new WebSocketServer({ noServer: true })
  return (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://standin')
    const match = FOLLOW_PATH.exec(url.pathname)
    if (!match || url.searchParams.get('follow') !== 'true') return false
    let command: SessionCommand
    try {
      const record = lookup(decodeURIComponent(match[1]!))
      command = sessions.command(record.dto.id, decodeURIComponent(match[2]!), decodeURIComponent(match[3]!))
    } catch {
      return false
    }
    server.handleUpgrade(request, socket, head, (ws: WebSocket) => {
      const send = (stream: 1 | 2, bytes: Buffer): void => {
        if (bytes.length > 0) ws.send(Buffer.concat([MARKERS[stream], bytes]), { binary: true })
        if (command.exitCode !== undefined) {
          command.followers.delete(send)
          ws.close(1000)
        }
      }
      for (const part of command.parts) ws.send(Buffer.concat([MARKERS[part.stream], part.bytes]), { binary: true })
      if (command.exitCode !== undefined) ws.close(1000)
      else command.followers.add(send)
      ws.on('close', () => command.followers.delete(send))
    })
    return true
  }
}
