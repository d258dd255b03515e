/**
 * A private git remote for tests: git's smart HTTP protocol served on
 * 127.0.0.1 by `git http-backend` run as a CGI from node:http, behind HTTP
 * Basic auth. Every request whose Basic password is not the token gets 401
 * with `WWW-Authenticate: Basic`, so a clone succeeds only when the token
 * travelled. It never listens beyond loopback and never records the token;
 * `stop()` closes the server and kills any backend still running.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request the server answered (no credentials recorded). */
export interface GitHttpRequest {
  method: string
  path: string
  status: number
  authorized: boolean
}

/** A running private git server. */
export interface GitHttpServer {
  /** Base URL, e.g. `http://127.0.0.1:40123`; a repository is `<url>/<name>.git`. */
  readonly url: string
  /** Every request so far, oldest first. */
  readonly requests: GitHttpRequest[]
  /** How many `git http-backend` processes are running now. */
  liveBackends: () => number
  /** Close the server and kill running backends. Safe to call twice. */
  stop: () => Promise<void>
}

/**
 * Serve the bare repositories under `projectRoot` to clients that send `token`
 * as the Basic auth password (any user name).
 * @param input - `projectRoot`: directory holding `<name>.git` bare repositories; `token`: the password to accept.
 * @example
 * ```ts
 * const git = await startGitHttpServer({ projectRoot: '/tmp/repos', token: 'tok' })
 * try { ... gitSource({ url: `${git.url}/app.git`, secret: secrets.GIT_TOKEN }) ... } finally { await git.stop() }
 * ```
 */
export async function startGitHttpServer(input: { projectRoot: string; token: string }): Promise<GitHttpServer> {
  const requests: GitHttpRequest[] = []
  const children = new Set<ChildProcess>()
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1')
    const user = basicUser(req.headers.authorization, input.token)
    const record: GitHttpRequest = { method: req.method ?? 'GET', path: url.pathname, status: 0, authorized: user !== undefined }
    requests.push(record)
    res.on('finish', () => (record.status = res.statusCode))
    if (user === undefined) {
      req.resume()
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="private git"', 'Content-Type': 'text/plain' })
      res.end('authentication required\n')
      return
    }
    serveCgi(req, res, url, user, input.projectRoot, children)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  let stopped: Promise<void> | undefined
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    liveBackends: () => children.size,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        for (const child of children) child.kill('SIGKILL')
        server.close(() => resolve())
        server.closeAllConnections()
      })),
  }
}

/** The Basic auth user name when the password is `token`, else undefined. */
function basicUser(header: string | undefined, token: string): string | undefined {
  const match = /^Basic\s+(\S+)$/i.exec(header ?? '')
  if (!match) return undefined
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0 || decoded.slice(colon + 1) !== token) return undefined
  return decoded.slice(0, colon) || 'git'
}

/** Run `git http-backend` for one request (RFC 3875 CGI) and relay its answer. */
function serveCgi(req: IncomingMessage, res: ServerResponse, url: URL, user: string, projectRoot: string, children: Set<ChildProcess>): void {
  const header = (name: string) => {
    const value = req.headers[name]
    return Array.isArray(value) ? value.join(', ') : value
  }
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GIT_PROJECT_ROOT: projectRoot,
    GIT_HTTP_EXPORT_ALL: '1',
    GATEWAY_INTERFACE: 'CGI/1.1',
    SERVER_PROTOCOL: 'HTTP/1.1',
    REQUEST_METHOD: req.method ?? 'GET',
    PATH_INFO: decodeURIComponent(url.pathname),
    QUERY_STRING: url.search.replace(/^\?/, ''),
    REMOTE_USER: user,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    CONTENT_TYPE: header('content-type') ?? '',
  }
  const optional: [string, string | undefined][] = [
    ['CONTENT_LENGTH', header('content-length')],
    ['HTTP_CONTENT_ENCODING', header('content-encoding')],
    ['GIT_PROTOCOL', header('git-protocol')],
  ]
  for (const [name, value] of optional) if (value !== undefined) env[name] = value

  const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'ignore'] })
  children.add(child)
  child.on('close', () => children.delete(child))
  child.on('error', () => fail(res, 500, 'git http-backend could not start'))
  req.pipe(child.stdin!)
  child.stdin!.on('error', () => undefined) // the backend may answer (and exit) before reading the whole body

  let head = Buffer.alloc(0)
  let headersSent = false
  child.stdout!.on('data', (data: Buffer) => {
    if (headersSent) {
      res.write(data)
      return
    }
    head = Buffer.concat([head, data])
    const end = headerEnd(head)
    if (!end) return
    const { status, headers } = parseCgiHeaders(head.subarray(0, end.at).toString('latin1'))
    res.writeHead(status, headers)
    headersSent = true
    res.write(head.subarray(end.at + end.length))
  })
  child.stdout!.on('end', () => {
    if (!headersSent) fail(res, 502, 'git http-backend wrote no CGI headers')
    else res.end()
  })
}

function headerEnd(buffer: Buffer): { at: number; length: number } | undefined {
  const crlf = buffer.indexOf('\r\n\r\n')
  const lf = buffer.indexOf('\n\n')
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 }
  return lf >= 0 ? { at: lf, length: 2 } : undefined
}

function parseCgiHeaders(text: string): { status: number; headers: Record<string, string> } {
  let status = 200
  const headers: Record<string, string> = {}
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim()
    const value = line.slice(colon + 1).trim()
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500
    else headers[name] = value
  }
  return { status, headers }
}

function fail(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.writeHead(status, { 'Content-Type': 'text/plain' })
  res.end(`${message}\n`)
}
