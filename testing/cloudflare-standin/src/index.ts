/**
 * The Cloudflare lab: the real `@cloudflare/sandbox@0.12.1` Durable Object in
 * real workerd (Miniflare), driving containers of the stand-in image
 * (`server/`, a control server of ours speaking the SDK's container HTTP API)
 * on the local Docker engine, offline. Tests bundle a Worker that re-exports
 * `Sandbox`, start a lab on it, call the Worker's RPC methods from Node and
 * close the lab, which removes exactly the containers its Durable Objects
 * started. It proves protocol conformance, not Cloudflare's server behaviour (README.md).
 */
import { request } from 'node:http'
import { createServer, type AddressInfo } from 'node:net'
import { dirname } from 'node:path'
import { build, type Loader } from 'esbuild'
import { Miniflare } from 'miniflare'
import { bridgeHostAddress, engine, endpointOptions } from '@testing/support/docker-engine'
import { startEngineProxy } from './engine-proxy.js'
import { CLOUDFLARE_IMAGE } from './image.js'

export { CLOUDFLARE_IMAGE, cloudflareMissing } from './image.js'

/**
 * Bundle a Worker entry (TypeScript or JS, with `@cloudflare/sandbox` and
 * whatever it imports) into one ESM file workerd loads, as
 * docs/design/cloudflare.md section 1 does: neutral platform, the `workerd`
 * and `worker` conditions, `cloudflare:*` and `node:*` left to the runtime.
 * @param entry Path of the Worker module.
 * @param outFile Where to write the bundle (its folder is created).
 * @param options `loader`: esbuild loaders by extension, e.g. `{ '.html': 'text' }` (what wrangler's module rules give a deploy).
 * @returns `outFile`.
 * @example
 * const script = await bundleWorker('tests/fixtures/worker.ts', join(tmp, 'worker.js'))
 */
export async function bundleWorker(entry: string, outFile: string, options: { loader?: Record<string, Loader> } = {}): Promise<string> {
  await build({
    ...(options.loader ? { loader: options.loader } : {}),
    entryPoints: [entry],
    outfile: outFile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import'],
    external: ['cloudflare:*', 'node:*'],
    logLevel: 'warning',
  })
  return outFile
}

/**
 * Bundle a Node program for the container (a `colocated` runner module with
 * `runInContainerHarness` and everything it imports) into one ESM file that
 * needs nothing from npm in the image: Node platform, `node:*` builtins left
 * to the runtime, and a `require` for the CommonJS parts of the bundle.
 * @param entry Path of the program's module.
 * @param outFile Where to write the bundle (its folder is created).
 * @returns `outFile`.
 * @example
 * const runner = await bundleContainerProgram('tests/helpers/runner.ts', join(tmp, 'runner.mjs'))
 */
export async function bundleContainerProgram(entry: string, outFile: string): Promise<string> {
  await build({
    entryPoints: [entry],
    outfile: outFile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    logLevel: 'warning',
  })
  return outFile
}

/** Options of {@link startCloudflareLab}. */
export interface CloudflareLabOptions {
  /** Path of the bundled Worker ({@link bundleWorker}); it must export `Sandbox` (the SDK's class). */
  script: string
  /** The container image of the `Sandbox` Durable Object (default {@link CLOUDFLARE_IMAGE}). */
  image?: string
  /** Extra Worker bindings (plain values: `SANDBOX_LOG_LEVEL`, `SANDBOX_TRANSPORT`, …). */
  bindings?: Record<string, unknown>
  /**
   * Address Miniflare listens on. Default: the Docker bridge's address on
   * this machine (172.17.0.1 on a default engine), so a container can reach
   * the Worker at {@link CloudflareLab.containerUrl}; 127.0.0.1 when there is none.
   */
  host?: string
  /**
   * Bind mounts every container of this lab gets (`source` on this machine,
   * `target` in the container): the stand-in for what a user's own image has
   * installed, e.g. an agent CLI's binary. Added to workerd's create request
   * by the lab's engine proxy.
   */
  mounts?: { source: string; target: string; readOnly?: boolean }[]
  /**
   * Map `host.docker.internal` to the engine's host gateway in every container
   * (workerd adds no such entry), so a container reaches a server on this
   * machine by that name, as a cloud container reaches a public one. Default `false`.
   */
  hostGateway?: boolean
  /**
   * More Durable Object classes of the Worker, without containers: binding
   * name to exported class name (e.g. `{ Agent: 'ChatAgent' }`), SQLite storage.
   */
  durableObjects?: Record<string, string>
  /**
   * A folder on this machine that keeps the Durable Objects' storage, so a
   * lab started again on the same folder finds it (a coordinator restart).
   * Default: in memory, gone with the lab.
   */
  persist?: string
}

/** A running lab. */
export interface CloudflareLab {
  readonly mf: Miniflare
  /** The Worker's URL on this machine. */
  readonly url: URL
  /**
   * The Worker's URL as a container of this lab reaches it (the bridge
   * address and Miniflare's port), or `undefined` when Miniflare listens only
   * on loopback.
   */
  readonly containerUrl: URL | undefined
  /** The Worker's default export as an RPC stub (`mf.getWorker()`); type it with the Worker's class. */
  worker<T>(): Promise<T>
  /** `mf.dispatchFetch`: a request to the Worker's `fetch` (preview URLs included). */
  dispatchFetch: Miniflare['dispatchFetch']
  /**
   * Dispose of Miniflare and start it again with the same options on the
   * same port, as a platform restart of the Worker and its Durable Objects:
   * their in-memory state is gone, their storage stays when the lab has
   * `persist`, and containers are left to what workerd does on shutdown.
   */
  restart(): Promise<void>
  /** Names of the `workerd--*` containers this lab's Durable Objects created that still exist. */
  containers(): Promise<string[]>
  /** Dispose of Miniflare, remove this lab's containers, and throw if one is left. */
  close(): Promise<void>
}

/** A port free on `host` right now (the OS picks it; Miniflare binds it a moment later). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, host, () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** Whether a container of this name exists (running or not). */
async function exists(name: string): Promise<boolean> {
  return (await engine(`/containers/${encodeURIComponent(name)}/json`)).status === 200
}

/** `docker rm -f` over the Engine API; a container already gone is fine. */
async function removeContainer(name: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const req = request({ ...endpointOptions(), method: 'DELETE', path: `/containers/${encodeURIComponent(name)}?force=1&v=1`, timeout: 30_000 }, (res) => {
      res.resume()
      res.on('end', () => (res.statusCode === 204 || res.statusCode === 404 ? resolve() : reject(new Error(`removing container ${name}: HTTP ${res.statusCode}`))))
    })
    req.on('error', reject)
    req.end()
  })
}

/**
 * Start Miniflare on a bundled Worker with the `Sandbox` Durable Object bound
 * as `Sandbox` (SQLite storage, container `image`), its containers created
 * through a recording proxy of the engine (`DOCKER_HOST` or
 * /var/run/docker.sock) so {@link CloudflareLab.close} removes exactly them;
 * the proxy also adds `mounts` and `hostGateway` to each container it creates.
 * Use unique sandbox ids per test: a Durable Object name maps to the same
 * container name in every lab, and a running one would be adopted.
 * @returns The running lab.
 * @throws Error when Miniflare cannot start (the proxy is closed again).
 * @example
 * const lab = await startCloudflareLab({ script })
 * const worker = await lab.worker<TestWorker>()
 * await worker.exec(`t-${randomUUID().slice(0, 8)}`, 'echo hi')
 * await lab.close()
 */
export async function startCloudflareLab(options: CloudflareLabOptions): Promise<CloudflareLab> {
  const bridge = await bridgeHostAddress().catch(() => undefined)
  const host = options.host ?? bridge ?? '127.0.0.1'
  // Miniflare does not report the entry port of a host other than loopback or 0.0.0.0 (its `ready` URL is a
  // second, 127.0.0.1 socket), so the lab picks a free port on that host itself and says which.
  const local = ['127.0.0.1', 'localhost', '0.0.0.0', '::', '::1', '*'].includes(host)
  const port = local ? 0 : await freePort(host)
  const proxy = await startEngineProxy({
    hostConfig: {
      Binds: (options.mounts ?? []).map((m) => `${m.source}:${m.target}${m.readOnly ? ':ro' : ''}`),
      ExtraHosts: options.hostGateway ? ['host.docker.internal:host-gateway'] : [],
    },
  })
  const miniflareOptions = {
    modules: true,
    scriptPath: options.script,
    modulesRoot: dirname(options.script), // workerd refuses module paths that climb out of the root with `..`
    compatibilityDate: '2025-09-01',
    compatibilityFlags: ['nodejs_compat'],
    host,
    port,
    bindings: options.bindings ?? {},
    durableObjects: {
      ...Object.fromEntries(Object.entries(options.durableObjects ?? {}).map(([binding, className]) => [binding, { className, useSQLite: true }])),
      Sandbox: { className: 'Sandbox', useSQLite: true, container: { imageName: options.image ?? CLOUDFLARE_IMAGE } },
    },
    containerEngine: proxy.url,
    ...(options.persist ? { durableObjectsPersist: options.persist } : {}),
  } as ConstructorParameters<typeof Miniflare>[0]
  let mf: Miniflare
  let url: URL
  try {
    mf = new Miniflare(miniflareOptions)
    url = await mf.ready
  } catch (error) {
    await proxy.close()
    throw error
  }
  const containerUrl = host === '0.0.0.0' && bridge !== undefined ? new URL(`http://${bridge}:${url.port}/`) : local ? undefined : new URL(`http://${host}:${port}/`)
  const containers = async () => {
    const names: string[] = []
    for (const name of await proxy.created()) if (await exists(name)) names.push(name)
    return names
  }
  return {
    get url() {
      return url
    },
    containerUrl,
    get mf() {
      return mf
    },
    restart: async () => {
      await mf.dispose()
      // The same port (the one Miniflare had), so clients and containers reach the new runtime where they reached the old one.
      mf = new Miniflare({ ...miniflareOptions, port: port || Number(url.port) })
      url = await mf.ready
    },
    worker: async <T>() => (await mf.getWorker()) as unknown as T,
    dispatchFetch: ((...args: Parameters<Miniflare['dispatchFetch']>) => mf.dispatchFetch(...args)) as Miniflare['dispatchFetch'],
    containers,
    close: async () => {
      await mf.dispose()
      await proxy.close()
      for (const name of await proxy.created()) await removeContainer(name)
      const left = await containers()
      if (left.length > 0) throw new Error(`containers of this lab are still there after close(): ${left.join(', ')}`)
      const problems = await proxy.problems()
      if (problems.length > 0) throw new Error(`the lab's engine proxy could not add mounts or hosts: ${problems.join('; ')}`)
    },
  }
}
