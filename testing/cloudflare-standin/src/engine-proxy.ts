/**
 * A unix-socket proxy in front of the Docker engine, handed to Miniflare as
 * its `containerEngine`, that writes down the name of every container workerd
 * creates through it: how a lab knows exactly which `workerd--*` containers
 * are its own while other suites run labs on the same engine. It runs in a
 * worker thread, because Miniflare's RPC proxy blocks the main thread
 * (`Atomics.wait`) while a call waits on a container start, and a proxy on
 * that thread would then deadlock. It forwards bytes untouched (attach and
 * hijacked streams included) and never removes anything itself, except
 * that it can add bind mounts and extra hosts to each container-create
 * request (the lab's `mounts` and `hostGateway`), and that workerd's watch
 * of a container waits for its next exit (a watch the engine served between
 * create and start used to end at once, and workerd then killed the new
 * container as crashed).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { endpointOptions } from '@testing/support/docker-engine'

/** A running proxy. */
export interface EngineProxy {
  /** `unix://…` to pass as Miniflare's `containerEngine`. */
  readonly url: string
  /** Names of the containers created through this proxy so far. */
  created(): Promise<string[]>
  /** Create requests it could not rewrite (empty when all got the `hostConfig`, or when there is none). */
  problems(): Promise<string[]>
  close(): Promise<void>
}

/**
 * The thread: accept, connect upstream, pipe both ways, and report each
 * `POST …/containers/create?name=…`. It follows the client's HTTP/1.1
 * requests (Content-Length or chunked bodies): with `workerData.hostConfig`
 * it rewrites each create request's body, appending the given `Binds` and
 * `ExtraHosts` to its `HostConfig`, and it sends each container wait with
 * `condition=next-exit` (see `WAIT_LINE`); after an upgrade, an attach or an
 * exec start the connection is raw bytes and is no longer read. A create request
 * it cannot rewrite is reported as an error (the lab then fails) rather than
 * sent without the mounts.
 */
const THREAD = `
const { createServer, createConnection } = require('node:net')
const { parentPort, workerData } = require('node:worker_threads')
const CREATE = /POST \\/(?:v[\\d.]+\\/)?containers\\/create\\?(?:[^ ]*&)?name=([^ &]+)/g
const CREATE_LINE = /^POST \\/(?:v[\\d.]+\\/)?containers\\/create[? ]/
const RAW_AFTER = /^[A-Z]+ \\/(?:v[\\d.]+\\/)?(?:containers\\/[^/ ]+\\/attach|exec\\/[^/ ]+\\/start)[? ]/
const WAIT_LINE = /^POST (\\/(?:v[\\d.]+\\/)?containers\\/[^/ ]+\\/wait) (HTTP\\/1\\.[01])$/
const HEAD_END = Buffer.from('\\r\\n\\r\\n')
const created = new Set()
const sockets = new Set()
const problems = []
const hostConfig = workerData.hostConfig

function rewriteCreate(body) {
  const spec = JSON.parse(body.toString('utf8'))
  const host = (spec.HostConfig = spec.HostConfig || {})
  for (const key of Object.keys(hostConfig || {})) host[key] = [...(host[key] || []), ...hostConfig[key]]
  return Buffer.from(JSON.stringify(spec))
}

/** Decode a complete chunked body at the start of buf: [body, bytesUsed], or undefined when more is needed. */
function dechunk(buf) {
  const parts = []
  let at = 0
  for (;;) {
    const eol = buf.indexOf('\\r\\n', at)
    if (eol < 0) return undefined
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16)
    if (Number.isNaN(size)) throw new Error('bad chunk size')
    if (size === 0) {
      const end = buf.indexOf(HEAD_END, eol)
      if (end < 0) return undefined
      return [Buffer.concat(parts), end + 4]
    }
    if (buf.length < eol + 2 + size + 2) return undefined
    parts.push(buf.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}

/** Follows one connection's requests; returns the bytes to send upstream for each client chunk. */
function rewriter() {
  let pending = Buffer.alloc(0)
  let state = { kind: 'head' }
  return (chunk) => {
    if (state.kind === 'raw') return chunk
    pending = Buffer.concat([pending, chunk])
    const out = []
    for (;;) {
      if (state.kind === 'raw') { out.push(pending); pending = Buffer.alloc(0); break }
      if (state.kind === 'length') {
        const n = Math.min(state.left, pending.length)
        out.push(pending.subarray(0, n)); pending = pending.subarray(n); state.left -= n
        if (state.left > 0) break
        state = { kind: state.then }
        continue
      }
      if (state.kind === 'chunked') {
        const done = dechunk(pending)
        if (!done) break
        out.push(pending.subarray(0, done[1])); pending = pending.subarray(done[1])
        state = { kind: state.then }
        continue
      }
      const end = pending.indexOf(HEAD_END)
      if (end < 0) break
      const head = pending.subarray(0, end).toString('latin1')
      const [line, ...headers] = head.split('\\r\\n')
      const header = (name) => headers.find((h) => h.toLowerCase().startsWith(name + ':'))?.slice(name.length + 1).trim()
      const length = Number(header('content-length') || 0)
      const chunked = /chunked/i.test(header('transfer-encoding') || '')
      const then = header('upgrade') !== undefined || RAW_AFTER.test(line) ? 'raw' : 'head'
      if (CREATE_LINE.test(line)) {
        const rest = pending.subarray(end + 4)
        let body
        let used
        if (chunked) { const done = dechunk(rest); if (!done) break; [body, used] = done }
        else { if (rest.length < length) break; body = rest.subarray(0, length); used = length }
        let rewritten
        try { rewritten = rewriteCreate(body) } catch (error) {
          problems.push('a container-create request could not be rewritten: ' + error.message)
          rewritten = body
        }
        const kept = headers.filter((h) => !/^(content-length|transfer-encoding):/i.test(h))
        out.push(Buffer.from([line, ...kept, 'Content-Length: ' + rewritten.length].join('\\r\\n') + '\\r\\n\\r\\n', 'latin1'), rewritten)
        pending = rest.subarray(used)
        state = { kind: then }
        continue
      }
      // workerd watches each container with a wait it sends right after the create; when the engine serves it
      // before the start, the default condition (not-running) holds at once, workerd takes the new container for
      // crashed, and kills and re-creates it, again and again (a loaded machine makes that order common).
      // Waiting for the container's next exit is what workerd means.
      const wait = WAIT_LINE.exec(line)
      if (wait) out.push(Buffer.from(['POST ' + wait[1] + '?condition=next-exit ' + wait[2], ...headers].join('\\r\\n') + '\\r\\n\\r\\n', 'latin1'))
      else out.push(pending.subarray(0, end + 4))
      pending = pending.subarray(end + 4)
      state = chunked ? { kind: 'chunked', then } : length > 0 ? { kind: 'length', left: length, then } : { kind: then }
    }
    return Buffer.concat(out)
  }
}

const server = createServer((client) => {
  const upstream = workerData.endpoint.socketPath ? createConnection({ path: workerData.endpoint.socketPath }) : createConnection(workerData.endpoint)
  sockets.add(client).add(upstream)
  let tail = ''
  const rewrite = rewriter()
  client.on('data', (chunk) => {
    const text = tail + chunk.toString('latin1')
    for (const match of text.matchAll(CREATE)) created.add(decodeURIComponent(match[1]))
    tail = text.slice(-200)
    let bytes
    try { bytes = rewrite(chunk) } catch (error) { problems.push('engine proxy: ' + error.message); bytes = chunk }
    if (bytes.length > 0 && !upstream.write(bytes)) { client.pause(); upstream.once('drain', () => client.resume()) }
  })
  client.on('end', () => upstream.end())
  upstream.pipe(client)
  const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
  client.on('error', drop).on('close', drop)
  upstream.on('error', drop).on('close', drop)
})
server.listen(workerData.socketPath, () => parentPort.postMessage({ type: 'listening' }))
server.on('error', (error) => parentPort.postMessage({ type: 'error', message: error.message }))
parentPort.on('message', (message) => {
  if (message === 'created') parentPort.postMessage({ type: 'created', names: [...created], problems })
  if (message === 'close') {
    for (const socket of sockets) socket.destroy()
    server.close(() => parentPort.postMessage({ type: 'closed', names: [...created], problems }))
  }
})
`

/** What every container created through the proxy gets on top of workerd's own settings. */
export interface EngineProxyOptions {
  /** Appended to each create request's `HostConfig` (arrays are extended, never replaced). */
  hostConfig?: { Binds?: string[]; ExtraHosts?: string[] }
}

/**
 * Start a proxy on a fresh socket in a temp folder, upstream `DOCKER_HOST` or /var/run/docker.sock.
 * @param options `hostConfig`: added to every container-create request (none: bytes pass untouched).
 */
export async function startEngineProxy(options: EngineProxyOptions = {}): Promise<EngineProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'cf-lab-engine-'))
  const socketPath = join(dir, 'docker.sock')
  const hostConfig = options.hostConfig && Object.values(options.hostConfig).some((list) => list.length > 0) ? options.hostConfig : undefined
  const thread = new Worker(THREAD, { eval: true, workerData: { socketPath, endpoint: endpointOptions(), hostConfig } })
  type Reply = { type: string; names?: string[]; problems?: string[]; message?: string }
  const next = (type: string) =>
    new Promise<Reply>((resolve, reject) => {
      const onMessage = (message: Reply) => {
        if (message.type === 'error') reject(new Error(`engine proxy: ${message.message}`))
        else if (message.type === type) resolve(message)
        else return
        thread.off('message', onMessage)
      }
      thread.on('message', onMessage)
    })
  try {
    await next('listening')
  } catch (error) {
    await thread.terminate()
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  let last: Reply = { type: 'created' }
  let closed = false
  const ask = async () => {
    if (closed) return last
    const reply = next('created')
    thread.postMessage('created')
    return (last = await reply)
  }
  return {
    url: `unix://${socketPath}`,
    created: async () => (await ask()).names ?? [],
    problems: async () => (await ask()).problems ?? [],
    close: async () => {
      if (closed) return
      const reply = next('closed')
      thread.postMessage('close')
      last = await reply
      closed = true
      await thread.terminate()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
