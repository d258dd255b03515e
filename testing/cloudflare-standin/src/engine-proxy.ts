/**
 * A unix-socket proxy in front of the Docker engine, handed to Miniflare as
 * its `containerEngine`, that writes down the name of every container workerd
 * creates through it: how a lab knows exactly which `workerd--*` containers
 * are its own while other suites run labs on the same engine. It runs in a
 * worker thread, because Miniflare's RPC proxy blocks the main thread
 * (`Atomics.wait`) while a call waits on a container start, and a proxy on
 * that thread would then deadlock. It forwards bytes untouched (attach and
 * hijacked streams included) and never removes anything itself.
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
  close(): Promise<void>
}

/** The thread: accept, connect upstream, pipe both ways, and report each `POST …/containers/create?name=…`. */
const THREAD = `
const { createServer, createConnection } = require('node:net')
const { parentPort, workerData } = require('node:worker_threads')
const CREATE = /POST \\/(?:v[\\d.]+\\/)?containers\\/create\\?(?:[^ ]*&)?name=([^ &]+)/g
const created = new Set()
const sockets = new Set()
const server = createServer((client) => {
  const upstream = workerData.endpoint.socketPath ? createConnection({ path: workerData.endpoint.socketPath }) : createConnection(workerData.endpoint)
  sockets.add(client).add(upstream)
  let tail = ''
  client.on('data', (chunk) => {
    const text = tail + chunk.toString('latin1')
    for (const match of text.matchAll(CREATE)) created.add(decodeURIComponent(match[1]))
    tail = text.slice(-200)
  })
  client.pipe(upstream).pipe(client)
  const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream) }
  client.on('error', drop).on('close', drop)
  upstream.on('error', drop).on('close', drop)
})
server.listen(workerData.socketPath, () => parentPort.postMessage({ type: 'listening' }))
server.on('error', (error) => parentPort.postMessage({ type: 'error', message: error.message }))
parentPort.on('message', (message) => {
  if (message === 'created') parentPort.postMessage({ type: 'created', names: [...created] })
  if (message === 'close') {
    for (const socket of sockets) socket.destroy()
    server.close(() => parentPort.postMessage({ type: 'closed', names: [...created] }))
  }
})
`

/** Start a proxy on a fresh socket in a temp folder, upstream `DOCKER_HOST` or /var/run/docker.sock. */
export async function startEngineProxy(): Promise<EngineProxy> {
  const dir = mkdtempSync(join(tmpdir(), 'cf-lab-engine-'))
  const socketPath = join(dir, 'docker.sock')
  const thread = new Worker(THREAD, { eval: true, workerData: { socketPath, endpoint: endpointOptions() } })
  const next = (type: string) =>
    new Promise<{ names?: string[] }>((resolve, reject) => {
      const onMessage = (message: { type: string; names?: string[]; message?: string }) => {
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
  let last: string[] = []
  let closed = false
  return {
    url: `unix://${socketPath}`,
    created: async () => {
      if (closed) return last
      const reply = next('created')
      thread.postMessage('created')
      return (last = (await reply).names ?? [])
    },
    close: async () => {
      if (closed) return
      const reply = next('closed')
      thread.postMessage('close')
      last = (await reply).names ?? []
      closed = true
      await thread.terminate()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
