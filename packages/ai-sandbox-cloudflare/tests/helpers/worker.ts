/**
 * The test Worker: runs `cloudflareSandbox()` inside workerd, next to the
 * SDK's `Sandbox` Durable Object, and exposes one RPC method per provider
 * and handle operation as `POST /__rpc/<method>`, so Node-side tests drive
 * the real provider with Node's fetch (remote-handle.ts; Miniflare's
 * `getWorker()` proxy would block Node's event loop for the length of a call,
 * so an abort could never be sent while an exec runs). Handles and spawned
 * processes live in this isolate between calls, keyed by tokens (the live
 * lane serves the same target from a Durable Object). Results travel as data
 * (wire.ts); a spawned process's output as an NDJSON stream. Its `fetch`
 * also serves preview URLs through `proxyToSandbox`, and under
 * `/__preview/<host>/…` for clients that cannot resolve `*.localhost`.
 */
import { DurableObject, WorkerEntrypoint } from 'cloudflare:workers'
import { proxyToSandbox } from '@cloudflare/sandbox'
import type { ExecOptions, ProcessOptions, SandboxCapabilities, SandboxHandle, SandboxProvider, SpawnedProcess } from '@tanstack/ai-sandbox'
import { cloudflareSandbox } from '../../src/index.js'
import type { CloudflareSandboxConfig, SandboxNamespaceBinding } from '../../src/index.js'
import { decodeJson, encodeJson, settle, toWire } from './wire.js'
import type { SpawnEvent, Wire } from './wire.js'

export { Sandbox } from '../../src/index.js'

/** A Durable Object of another class, for the wrong-binding case (a lab binds it as `Other` when asked). */
export class OtherObject extends DurableObject {}

/** What the RPC target reads of the Worker's env. */
export interface Env {
  Sandbox: SandboxNamespaceBinding
}

/** Provider options as a test passes them: everything but the binding. */
export type TestProviderOptions = Omit<CloudflareSandboxConfig, 'binding'> & {
  /** The env binding to pass as `binding` (default `Sandbox`). */
  bindingName?: string
}

/** A handle as the Node side sees it. */
export interface HandleInfo {
  readonly token: string
  readonly id: string
  readonly provider: string
  readonly workspaceRoot: string
  readonly capabilities: SandboxCapabilities
}

const providers = new Map<string, SandboxProvider>()
const handles = new Map<string, SandboxHandle>()
const processes = new Map<string, SpawnedProcess>()
const aborted = new Set<string>()

const RPC_METHODS = new Set(['open', 'create', 'resume', 'destroy', 'handleDestroy', 'exec', 'abort', 'spawn', 'kill', 'stdinWrite', 'fs', 'git', 'envSet', 'portsConnect', 'snapshot', 'fork'])
const FS_METHODS = new Set(['read', 'readBytes', 'write', 'list', 'mkdir', 'remove', 'rename', 'exists', 'lstat'])
const GIT_METHODS = new Set(['clone', 'status', 'add', 'commit', 'push', 'pull', 'branch'])

function token(): string {
  return crypto.randomUUID()
}

function info(handle: SandboxHandle): HandleInfo {
  const key = token()
  handles.set(key, handle)
  return { token: key, id: handle.id, provider: handle.provider, workspaceRoot: handle.workspaceRoot, capabilities: handle.capabilities }
}

function handleOf(key: string): SandboxHandle {
  const handle = handles.get(key)
  if (!handle) throw new Error(`test worker: no handle ${key} in this isolate`)
  return handle
}

/**
 * The RPC methods and the preview routes over one `env`. The local lab's
 * entrypoint below serves them from workerd's single isolate; the live lane
 * (live/worker.ts) serves them from a Durable Object, the one place a
 * deployed Worker keeps handles between requests.
 */
export class TestRpcTarget {
  constructor(private readonly env: Env) {}

  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url)
    if (url.pathname.startsWith('/__rpc/') && request.method === 'POST') return this.rpc(url.pathname.slice('/__rpc/'.length), await request.text())
    if (url.pathname.startsWith('/__preview/')) {
      const [host, ...rest] = url.pathname.slice('/__preview/'.length).split('/')
      const target = new Request(`http://${host}/${rest.join('/')}${url.search}`, request)
      return (await proxyToSandbox(target as never, this.env as never)) ?? new Response('no sandbox preview at this host', { status: 404 })
    }
    return (await proxyToSandbox(request as never, this.env as never)) ?? new Response('not a preview URL', { status: 404 })
  }

  /** One RPC method over plain HTTP (JSON in, JSON or a stream out), so the Node side's calls never block each other. */
  private async rpc(method: string, body: string): Promise<Response> {
    if (!RPC_METHODS.has(method)) return new Response(`no RPC method ${method}`, { status: 404 })
    const args = decodeJson<unknown[]>(body, { arguments: true })
    const result: unknown = await (this as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[method]!(...args)
    if (result instanceof ReadableStream) return new Response(result, { headers: { 'content-type': 'application/x-ndjson', 'cache-control': 'no-transform' } })
    return new Response(encodeJson(result ?? null), { headers: { 'content-type': 'application/json' } })
  }

  private provider(key: string, options: TestProviderOptions): SandboxProvider {
    let provider = providers.get(key)
    if (!provider) {
      const { bindingName = 'Sandbox', ...config } = options
      provider = cloudflareSandbox({ ...config, binding: (this.env as unknown as Record<string, SandboxNamespaceBinding>)[bindingName]! })
      providers.set(key, provider)
    }
    return provider
  }

  /** Make a provider (validating its options) and return its name and flags. */
  async open(key: string, options: TestProviderOptions): Promise<Wire<{ name: string; fingerprint?: string; capabilities: ReturnType<SandboxProvider['capabilities']> }>> {
    return settle(() => {
      const provider = this.provider(key, options)
      return { name: provider.name, ...(provider.fingerprint ? { fingerprint: provider.fingerprint } : {}), capabilities: provider.capabilities() }
    })
  }

  async create(key: string, options: TestProviderOptions, input: { env?: Record<string, string>; key?: string; labels?: Record<string, string>; network?: 'blocked' }): Promise<Wire<HandleInfo>> {
    return settle(async () => info(await this.provider(key, options).create(input)))
  }

  async resume(key: string, options: TestProviderOptions, id: string): Promise<Wire<HandleInfo | null>> {
    return settle(async () => {
      const handle = await this.provider(key, options).resume({ id })
      return handle ? info(handle) : null
    })
  }

  async destroy(key: string, options: TestProviderOptions, id: string): Promise<Wire<void>> {
    return settle(() => this.provider(key, options).destroy({ id }))
  }

  async handleDestroy(handle: string): Promise<Wire<void>> {
    return settle(() => handleOf(handle).destroy())
  }

  /** exec; an abort comes as a separate `abort(callId)` call, seen here by polling, so the kill runs in this request. */
  async exec(handle: string, command: string, options: Omit<ExecOptions, 'signal'>, callId?: string): Promise<Wire<{ exitCode: number; stdout: string; stderr: string }>> {
    const controller = new AbortController()
    const poll = callId
      ? setInterval(() => {
          if (aborted.delete(callId)) controller.abort(new Error('aborted by the test'))
        }, 20)
      : undefined
    try {
      return await settle(() => handleOf(handle).process.exec(command, { ...options, ...(callId ? { signal: controller.signal } : {}) }))
    } finally {
      clearInterval(poll)
      if (callId) aborted.delete(callId)
    }
  }

  async abort(callId: string): Promise<void> {
    aborted.add(callId)
  }

  /** spawn: the events of the process as NDJSON; the first is `started` (or `error`). */
  async spawn(handle: string, command: string, options: Omit<ProcessOptions, 'signal'>, processKey: string): Promise<ReadableStream<Uint8Array>> {
    const encoder = new TextEncoder()
    // An identity TransformStream: workerd streams its readable side chunk by chunk.
    const { readable: stream, writable } = new TransformStream<Uint8Array, Uint8Array>()
    const writer = writable.getWriter()
    const controller = { close: () => void writer.close().catch(() => undefined) }
    const send = (event: SpawnEvent) => void writer.write(encoder.encode(`${JSON.stringify(event)}\n`)).catch(() => undefined)
    let child: SpawnedProcess
    try {
      child = await handleOf(handle).process.spawn(command, options)
    } catch (error) {
      send({ t: 'error', error: toWire(error) })
      controller.close()
      return stream
    }
    processes.set(processKey, child)
    send({ t: 'started', ...(child.pid !== undefined ? { pid: child.pid } : {}) })
    const pump = async (source: AsyncIterable<string>, t: 'out' | 'err') => {
      for await (const d of source) send({ t, d })
    }
    void (async () => {
      try {
        await Promise.all([pump(child.stdout, 'out'), pump(child.stderr, 'err')])
        const exit = await child.wait()
        send({ t: 'exit', ...exit })
      } catch (error) {
        send({ t: 'error', error: toWire(error) })
      } finally {
        controller.close()
      }
    })()
    return stream
  }

  async kill(processKey: string, signal?: 'SIGTERM' | 'SIGKILL' | 'SIGINT'): Promise<Wire<void>> {
    return settle(() => {
      const child = processes.get(processKey)
      if (!child) throw new Error(`test worker: no process ${processKey}`)
      return child.kill(signal)
    })
  }

  async stdinWrite(processKey: string, data: string | Uint8Array): Promise<Wire<void>> {
    return settle(() => processes.get(processKey)!.stdin.write(data))
  }

  async fs(handle: string, method: string, args: unknown[]): Promise<Wire<unknown>> {
    return settle(() => {
      if (!FS_METHODS.has(method)) throw new Error(`test worker: fs.${method} is not forwarded`)
      const fs = handleOf(handle).fs as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>
      return fs[method]!(...args)
    })
  }

  async git(handle: string, method: string, args: unknown[]): Promise<Wire<unknown>> {
    return settle(() => {
      if (!GIT_METHODS.has(method)) throw new Error(`test worker: git.${method} is not forwarded`)
      const git = handleOf(handle).git as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>
      return git[method]!(...args)
    })
  }

  async envSet(handle: string, vars: Record<string, string>): Promise<Wire<void>> {
    return settle(() => handleOf(handle).env.set(vars))
  }

  async portsConnect(handle: string, port: number): Promise<Wire<{ url: string; hostname: string; port: number }>> {
    return settle(async () => ({ ...(await handleOf(handle).ports.connect(port)) }))
  }

  async snapshot(handle: string): Promise<Wire<unknown>> {
    return settle(() => handleOf(handle).snapshot!())
  }

  async fork(handle: string): Promise<Wire<unknown>> {
    return settle(() => handleOf(handle).fork!())
  }
}

let target: TestRpcTarget | undefined

/** The local lab's Worker: every request to the one RPC target of this isolate. */
export default class TestWorker extends WorkerEntrypoint<Env> {
  async fetch(request: Request): Promise<Response> {
    target ??= new TestRpcTarget(this.env)
    return target.fetch(request)
  }
}
