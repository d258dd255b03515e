/**
 * The route table of the control server: every route the SDK's `http`
 * transport sends that docs/design/cloudflare.md section 9 lists, each with
 * its handler. Owns the wiring of requests to the session and process stores;
 * the shell work is theirs. Anything not in the table is a JSON 404
 * `UNKNOWN_ERROR`, so a new SDK call shows up as a failing test.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { deleteRoute, existsRoute, listFilesRoute, mkdirRoute, moveRoute, readRoute, renameRoute, writeRoute } from './files.js'
import { StandinError, now, readJson, required, sendError, sendJson, startSse } from './http.js'
import { ProcessStore, type ProcessRecord } from './processes.js'
import { SessionStore, WORKSPACE } from './sessions.js'
import type {
  CommandExecuteResponse,
  CreateSessionRequest,
  CreateSessionResponse,
  DeleteSessionRequest,
  DeleteSessionResponse,
  ExecEvent,
  ExecuteRequest,
  LogEvent,
  PingResponse,
  ProcessCleanupResult,
  ProcessInfoResult,
  ProcessKillResult,
  ProcessListResult,
  ProcessLogsResult,
  ProcessStartResult,
  StartProcessRequest,
  VersionResponse,
} from './wire.js'

/** What a handler gets: the request, the answer, the path parameter (`{id}`) if any. */
interface Call {
  req: IncomingMessage
  res: ServerResponse
  id: string
}

/** A route: method, path with at most one `{id}` segment, handler (JSON result, or `undefined` when it answered itself). */
export interface Route {
  method: 'GET' | 'POST' | 'DELETE'
  path: string
  handle: (call: Call) => Promise<unknown>
}

export const sessions = new SessionStore()
export const processes = new ProcessStore()
const started = Date.now()

/** Run a foreground command, failing with `Command timeout after <n>ms` when it outlives `timeoutMs` (the command keeps running, as upstream). */
async function execute(body: ExecuteRequest): Promise<CommandExecuteResponse> {
  const command = required(body as never, 'command')
  return sessions.with(body.sessionId, async (session) => {
    const running = session.run(command, { env: body.env, cwd: body.cwd })
    const timeoutMs = body.timeoutMs ?? session.commandTimeoutMs
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      if (timeoutMs !== undefined) timer = setTimeout(() => reject(new StandinError('COMMAND_EXECUTION_ERROR', `Command timeout after ${timeoutMs}ms`, 500, { command, timeoutMs })), timeoutMs)
    })
    try {
      const result = await Promise.race([running, timeout])
      return { success: result.exitCode === 0, exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr, command, timestamp: now() }
    } finally {
      clearTimeout(timer)
    }
  })
}

/** Send the events of `record` to an SSE answer until it ends or the client leaves; `replay` first sends what was captured so far. */
function follow(call: Call, record: ProcessRecord, write: (event: object) => void, map: (event: Parameters<Parameters<ProcessRecord['listen']>[0]>[0]) => object): Promise<void> {
  return new Promise((resolve) => {
    const stop = record.listen((event) => {
      write(map(event))
      if (event.type === 'exit') {
        call.res.end()
        resolve()
      }
    })
    call.res.on('close', () => {
      stop()
      resolve()
    })
  })
}

/** `POST /api/execute/stream`: a background command as `ExecEvent`s (`start`, `stdout`, `stderr`, `complete`). */
async function executeStream(call: Call): Promise<undefined> {
  const body = await readJson<ExecuteRequest>(call.req)
  const command = required(body as never, 'command')
  const record = await sessions.with(body.sessionId, (session) => processes.start(session, command, { env: body.env, cwd: body.cwd, processId: `exec_${Date.now()}_${Math.random().toString(36).slice(2, 8)}` }))
  const write = startSse(call.res)
  write({ type: 'start', command, pid: record.pid, timestamp: now() } satisfies ExecEvent)
  if (body.timeoutMs !== undefined) {
    const timer = setTimeout(() => {
      write({ type: 'error', data: `Command timeout after ${body.timeoutMs}ms`, error: `Command timeout after ${body.timeoutMs}ms`, timestamp: now() } satisfies ExecEvent)
      call.res.end()
    }, body.timeoutMs)
    call.res.on('close', () => clearTimeout(timer))
  }
  await follow(call, record, write, (event): ExecEvent => (event.type === 'exit' ? { type: 'complete', exitCode: event.exitCode, timestamp: now() } : { ...event, timestamp: now() }))
  return undefined
}

/** `GET /api/process/{id}/stream`: `process_info`, then everything captured so far (one `stdout`, one `stderr`), then live `LogEvent`s up to `exit`. */
async function processStream(call: Call): Promise<undefined> {
  const record = processes.get(call.id)
  const write = startSse(call.res)
  write({ type: 'process_info', processId: record.id, command: record.command, status: record.status, timestamp: now() })
  const log = (type: 'stdout' | 'stderr', data: string): LogEvent => ({ type, data, processId: record.id, timestamp: now() })
  if (record.stdout) write(log('stdout', record.stdout))
  if (record.stderr) write(log('stderr', record.stderr))
  const exit = (): LogEvent => ({ type: 'exit', processId: record.id, exitCode: record.exitCode ?? 1, data: `Process ${record.status}`, timestamp: now() })
  if (!record.running) {
    write(exit())
    call.res.end()
    return undefined
  }
  await follow(call, record, write, (event) => (event.type === 'exit' ? exit() : log(event.type, event.data)))
  return undefined
}

export const ROUTES: Route[] = [
  { method: 'GET', path: '/', handle: async ({ res }) => void res.writeHead(200, { 'content-type': 'text/plain' }).end('OK') },
  { method: 'GET', path: '/api/version', handle: async (): Promise<VersionResponse> => ({ success: true, version: process.env.SANDBOX_VERSION ?? 'unknown', timestamp: now() }) },
  { method: 'GET', path: '/api/ping', handle: async (): Promise<PingResponse> => ({ success: true, message: 'pong', uptime: Date.now() - started, timestamp: now() }) },
  {
    method: 'POST',
    path: '/api/session/create',
    handle: async ({ req }): Promise<CreateSessionResponse> => {
      const body = await readJson<CreateSessionRequest>(req)
      const id = required(body as never, 'id')
      sessions.create(id, { env: body.env, cwd: body.cwd ?? WORKSPACE, commandTimeoutMs: body.commandTimeoutMs })
      return { success: true, id, message: `Session '${id}' created`, containerPlacementId: process.env.CLOUDFLARE_PLACEMENT_ID ?? null, timestamp: now() }
    },
  },
  {
    method: 'POST',
    path: '/api/session/delete',
    handle: async ({ req }): Promise<DeleteSessionResponse> => {
      const sessionId = required((await readJson<DeleteSessionRequest>(req)) as never, 'sessionId')
      sessions.delete(sessionId) // an unknown id is not an error: deleting is idempotent here
      return { success: true, sessionId, timestamp: now() }
    },
  },
  { method: 'POST', path: '/api/execute', handle: async ({ req }) => execute(await readJson<ExecuteRequest>(req)) },
  { method: 'POST', path: '/api/execute/stream', handle: executeStream },
  {
    method: 'POST',
    path: '/api/process/start',
    handle: async ({ req }): Promise<ProcessStartResult> => {
      const body = await readJson<StartProcessRequest>(req)
      const command = required(body as never, 'command')
      const record = await sessions.with(body.sessionId, (session) => processes.start(session, command, { env: body.env, cwd: body.cwd, processId: body.processId }))
      return { success: true, processId: record.id, pid: record.pid, command, timestamp: now() }
    },
  },
  { method: 'GET', path: '/api/process/list', handle: async (): Promise<ProcessListResult> => ({ success: true, processes: processes.list().map((r) => r.dto()), timestamp: now() }) },
  { method: 'DELETE', path: '/api/process/kill-all', handle: async (): Promise<ProcessCleanupResult> => ({ success: true, cleanedCount: await processes.killAll(), timestamp: now() }) },
  { method: 'GET', path: '/api/process/{id}', handle: async ({ id }): Promise<ProcessInfoResult> => ({ success: true, process: processes.get(id).dto(), timestamp: now() }) },
  {
    method: 'GET',
    path: '/api/process/{id}/logs',
    handle: async ({ id }): Promise<ProcessLogsResult> => {
      const record = processes.get(id)
      return { success: true, processId: id, stdout: record.stdout, stderr: record.stderr, timestamp: now() }
    },
  },
  { method: 'GET', path: '/api/process/{id}/stream', handle: processStream },
  {
    method: 'DELETE',
    path: '/api/process/{id}',
    handle: async ({ id }): Promise<ProcessKillResult> => {
      await processes.get(id).kill()
      return { success: true, processId: id, signal: 'SIGTERM', timestamp: now() }
    },
  },
  { method: 'POST', path: '/api/write', handle: async ({ req }) => writeRoute(await readJson(req)) },
  { method: 'POST', path: '/api/read', handle: async ({ req }) => readRoute(await readJson(req)) },
  { method: 'POST', path: '/api/mkdir', handle: async ({ req }) => mkdirRoute(await readJson(req)) },
  { method: 'POST', path: '/api/delete', handle: async ({ req }) => deleteRoute(await readJson(req)) },
  { method: 'POST', path: '/api/rename', handle: async ({ req }) => renameRoute(await readJson(req)) },
  { method: 'POST', path: '/api/move', handle: async ({ req }) => moveRoute(await readJson(req)) },
  { method: 'POST', path: '/api/exists', handle: async ({ req }) => existsRoute(await readJson(req)) },
  { method: 'POST', path: '/api/list-files', handle: async ({ req }) => listFilesRoute(await readJson(req)) },
]

/** The route for a method and path (literal routes first, so `/api/process/list` is not the id `list`), and its `{id}`. */
export function match(method: string, path: string): { route: Route; id: string } | undefined {
  for (const literal of [true, false]) {
    for (const route of ROUTES) {
      if (route.method !== method || route.path.includes('{id}') === literal) continue
      const pattern = new RegExp(`^${route.path.replace('{id}', '([^/]+)')}$`)
      const found = pattern.exec(path)
      if (found) return { route, id: decodeURIComponent(found[1] ?? '') }
    }
  }
  return undefined
}

/** Answer one request: the matched route's JSON result, its own answer, or an error body. Returns at once the route it matched (`METHOD /path`, `{id}` kept) for the log. */
export function dispatch(req: IncomingMessage, res: ServerResponse): string {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname
  const found = match(req.method ?? 'GET', path)
  if (!found) {
    sendError(res, new StandinError('UNKNOWN_ERROR', `Unknown route: ${req.method} ${path}`, 404, { method: req.method, path }))
    return `${req.method} ${path}`
  }
  found.route.handle({ req, res, id: found.id }).then(
    (result) => {
      if (result !== undefined) sendJson(res, 200, result)
    },
    (error: unknown) => sendError(res, error),
  )
  return `${found.route.method} ${found.route.path}`
}
