/**
 * The Node side of the test Worker (worker.ts): a `SandboxProvider` whose
 * every operation is one RPC call into workerd, where `cloudflareSandbox()`
 * runs for real, so the conformance kits drive the provider against a real
 * container. Typed errors are rebuilt from data (wire.ts); an AbortSignal,
 * which cannot cross RPC, becomes an `abort(callId)` call; a port URL is
 * served through the Worker's `/__preview/<host>/` route, since Node cannot
 * resolve the `*.localhost` names preview URLs use locally.
 */
import { randomUUID } from 'node:crypto'
import type { ExecOptions, ProcessExit, ProcessOptions, SandboxCapabilities, SandboxHandle, SandboxProvider, SpawnedProcess } from '@tanstack/ai-sandbox'
import { TextChunks } from '../../src/text-chunks.js'
import { decodeJson, encodeJson, fromWire, unwrap } from './wire.js'
import type { SpawnEvent, Wire } from './wire.js'
import type { HandleInfo, TestProviderOptions } from './worker.js'

/** The test Worker's RPC methods, as `mf.getWorker()` exposes them. */
export interface TestWorkerApi {
  open: (key: string, options: TestProviderOptions) => Promise<Wire<{ name: string; fingerprint?: string; capabilities: SandboxCapabilities }>>
  create: (key: string, options: TestProviderOptions, input: object) => Promise<Wire<HandleInfo>>
  resume: (key: string, options: TestProviderOptions, id: string) => Promise<Wire<HandleInfo | null>>
  destroy: (key: string, options: TestProviderOptions, id: string) => Promise<Wire<void>>
  handleDestroy: (handle: string) => Promise<Wire<void>>
  exec: (handle: string, command: string, options: object, callId?: string) => Promise<Wire<{ exitCode: number; stdout: string; stderr: string }>>
  abort: (callId: string) => Promise<void>
  spawn: (handle: string, command: string, options: object, processKey: string) => Promise<ReadableStream<Uint8Array>>
  kill: (processKey: string, signal?: string) => Promise<Wire<void>>
  stdinWrite: (processKey: string, data: string | Uint8Array) => Promise<Wire<void>>
  fs: (handle: string, method: string, args: unknown[]) => Promise<Wire<unknown>>
  git: (handle: string, method: string, args: unknown[]) => Promise<Wire<unknown>>
  envSet: (handle: string, vars: Record<string, string>) => Promise<Wire<void>>
  portsConnect: (handle: string, port: number) => Promise<Wire<{ url: string; hostname: string; port: number }>>
  snapshot: (handle: string) => Promise<Wire<unknown>>
  fork: (handle: string) => Promise<Wire<unknown>>
}

/** Where the Node side reaches the Worker's own `fetch` (the lab's URL), for preview URLs. */
export interface RemoteProviderOptions {
  readonly worker: TestWorkerApi
  readonly workerUrl: string
  readonly options?: TestProviderOptions
}

/**
 * A provider instance inside the test Worker, seen from Node.
 * @throws the provider's SandboxConfigError for bad options.
 */
export async function remoteProvider({ worker, workerUrl, options = {} }: RemoteProviderOptions): Promise<SandboxProvider> {
  const key = randomUUID()
  const opened = unwrap(await worker.open(key, options))
  const handleOf = (info: HandleInfo) => remoteHandle(worker, workerUrl, info)
  return {
    name: opened.name,
    ...(opened.fingerprint ? { fingerprint: opened.fingerprint } : {}),
    capabilities: () => opened.capabilities,
    create: async (input = {}) => {
      const { signal, ...rest } = input
      if (signal?.aborted) return Promise.reject(signal.reason)
      return handleOf(unwrap(await worker.create(key, options, rest)))
    },
    resume: async ({ id }) => {
      const info = unwrap(await worker.resume(key, options, id))
      return info ? handleOf(info) : null
    },
    destroy: async ({ id }) => unwrap(await worker.destroy(key, options, id)),
  }
}

function remoteHandle(worker: TestWorkerApi, workerUrl: string, info: HandleInfo): SandboxHandle {
  const fs = (method: string) => async (...args: unknown[]) => unwrap(await worker.fs(info.token, method, args))
  const git = (method: string) => async (...args: unknown[]) => unwrap(await worker.git(info.token, method, args))
  return {
    id: info.id,
    provider: info.provider,
    capabilities: info.capabilities,
    workspaceRoot: info.workspaceRoot,
    fs: {
      read: fs('read') as never,
      readBytes: async (path) => {
        const bytes = (await fs('readBytes')(path)) as Uint8Array
        return new Uint8Array(bytes)
      },
      write: fs('write') as never,
      list: fs('list') as never,
      mkdir: fs('mkdir') as never,
      remove: fs('remove') as never,
      rename: fs('rename') as never,
      exists: fs('exists') as never,
      lstat: fs('lstat') as never,
    },
    git: { clone: git('clone'), status: git('status'), add: git('add'), commit: git('commit'), push: git('push'), pull: git('pull'), branch: git('branch') } as never,
    process: {
      exec: (command, options = {}) => remoteExec(worker, info.token, command, options),
      spawn: (command, options = {}) => remoteSpawn(worker, info.token, command, options),
    },
    ports: {
      connect: async (port) => {
        const connection = unwrap(await worker.portsConnect(info.token, port))
        const preview = new URL(connection.url)
        const url = `${workerUrl.replace(/\/$/, '')}/__preview/${preview.host}${preview.pathname}`
        return { url, hostname: new URL(url).hostname, port: connection.port, previewUrl: connection.url } as never
      },
    },
    env: { set: async (vars) => unwrap(await worker.envSet(info.token, vars)) },
    snapshot: async () => unwrap(await worker.snapshot(info.token)) as never,
    fork: async () => unwrap(await worker.fork(info.token)) as never,
    hostAccess: async () => undefined,
    destroy: async () => unwrap(await worker.handleDestroy(info.token)),
  }
}

async function remoteExec(worker: TestWorkerApi, handle: string, command: string, options: ExecOptions) {
  const { signal, ...rest } = options
  if (!signal) return unwrap(await worker.exec(handle, command, rest))
  const callId = randomUUID()
  const onAbort = () => void worker.abort(callId).catch(() => undefined)
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    if (signal.aborted) onAbort()
    return unwrap(await worker.exec(handle, command, rest, callId))
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

async function remoteSpawn(worker: TestWorkerApi, handle: string, command: string, options: ProcessOptions): Promise<SpawnedProcess> {
  const { signal, ...rest } = options
  const processKey = randomUUID()
  const reader = (await worker.spawn(handle, command, rest, processKey)).getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const next = async (): Promise<SpawnEvent | undefined> => {
    for (;;) {
      const newline = buffer.indexOf('\n')
      if (newline !== -1) {
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 1)
        return JSON.parse(line) as SpawnEvent
      }
      const { done, value } = await reader.read()
      if (done) return undefined
      buffer += decoder.decode(value, { stream: true })
    }
  }
  const first = await next()
  if (!first || first.t === 'error') throw first ? fromWire(first.error) : new Error('test worker: the spawn stream ended at once')
  const stdout = new TextChunks()
  const stderr = new TextChunks()
  const encoder = new TextEncoder()
  const exit: Promise<ProcessExit> = (async () => {
    for (;;) {
      const event = await next()
      if (!event) throw new Error('test worker: the spawn stream ended without an exit')
      if (event.t === 'out') stdout.push(encoder.encode(event.d))
      else if (event.t === 'err') stderr.push(encoder.encode(event.d))
      else if (event.t === 'exit') {
        stdout.end()
        stderr.end()
        return event.signal ? { exitCode: event.exitCode, signal: event.signal } : { exitCode: event.exitCode }
      } else if (event.t === 'error') {
        const error = fromWire(event.error)
        stdout.fail(error)
        stderr.fail(error)
        throw error
      }
    }
  })()
  exit.catch(() => undefined)
  const kill = async (killSignal?: 'SIGTERM' | 'SIGKILL' | 'SIGINT') => unwrap(await worker.kill(processKey, killSignal))
  signal?.addEventListener('abort', () => void kill('SIGTERM').catch(() => undefined), { once: true })
  return {
    ...(first.t === 'started' && first.pid !== undefined ? { pid: first.pid } : {}),
    stdout,
    stderr,
    stdin: {
      write: async (data) => unwrap(await worker.stdinWrite(processKey, data)),
      end: async () => undefined,
    },
    wait: () => exit,
    kill,
  }
}

/**
 * The test Worker's methods over `POST /__rpc/<method>` with Node's own
 * fetch: asynchronous, so an abort or a kill reaches the Worker while an
 * exec is still running.
 * @param base - The Worker's URL.
 * @param headers - Sent with every call (the live lane's bearer token).
 */
export function httpWorker(base: string, headers: Record<string, string> = {}): TestWorkerApi {
  return new Proxy({} as TestWorkerApi, {
    get: (_target, method) => async (...args: unknown[]) => {
      const response = await fetch(new URL(`__rpc/${String(method)}`, base), { method: 'POST', headers, body: encodeJson(args) })
      if (!response.ok) throw new Error(`test worker: ${String(method)} answered HTTP ${response.status}: ${await response.text()}`)
      if (method === 'spawn') return response.body
      return decodeJson(await response.text())
    },
  })
}
