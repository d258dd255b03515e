/**
 * The Cloudflare lab for this package's suites: the test Worker (worker.ts)
 * bundled for workerd, one Miniflare per suite file with the SDK's `Sandbox`
 * Durable Object driving stand-in containers, started when the file loads
 * (the conformance kits read capabilities while they register cases), and
 * closed after the suite, which also checks that no container is left.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect } from 'vitest'
import { build } from 'esbuild'
import { cloudflareMissing, startCloudflareLab } from '@testing/cloudflare-standin'
import type { CloudflareLab } from '@testing/cloudflare-standin'
import type { SandboxProvider } from '@tanstack/ai-sandbox'
import { httpWorker, remoteProvider } from './remote-handle.js'
import type { TestWorkerApi } from './remote-handle.js'
import type { TestProviderOptions } from './worker.js'

/** One suite file's lab. */
export interface CloudflareTestLab {
  /** Why the suite skips (no engine or image); `null` when it runs. */
  readonly reason: string | null
  readonly lab: CloudflareLab
  readonly worker: TestWorkerApi
  /** A provider inside the Worker, `options` over the suite's defaults (kill grace 500 ms, preview under the lab's host, a 150 s start bound: a loaded CI machine starts containers slowly). */
  provider: (options?: TestProviderOptions) => Promise<SandboxProvider>
  /** The containers of this lab's sandboxes that exist now. */
  containers: () => Promise<string[]>
  /** Close the lab now (Miniflare, its containers, the bundle's folder). */
  close: () => Promise<void>
  /** Register the after-suite hook: lab closed, nothing left. Call inside the describe. */
  cleanupAfter: () => void
}

/** Options of {@link cloudflareTestLab}; all default to the test Worker's local setting. */
export interface CloudflareTestLabOptions {
  /** The Worker module to bundle. Default: tests/helpers/worker.ts. */
  readonly entry?: string
  /** The container image (default: the stand-in's). */
  readonly image?: string
  /** The Worker's own Durable Object classes, binding → class name (the live Worker's `KitRpc`). */
  readonly durableObjects?: Record<string, string>
  /** Extra Worker bindings (plain values). */
  readonly bindings?: Record<string, unknown>
  /** Headers of every RPC call (the live Worker's bearer token). */
  readonly headers?: Record<string, string>
  /** A folder that keeps the Durable Objects' storage across labs started on it (a restart). Default: in memory. */
  readonly persist?: string
}

/** Bundle the test Worker (or `options.entry`) and start a lab on it (when the engine and the image are there). */
export async function cloudflareTestLab(options: CloudflareTestLabOptions = {}): Promise<CloudflareTestLab> {
  const reason = (await cloudflareMissing(options.image)) ?? null
  if (reason !== null) {
    const none = async () => Promise.reject(new Error(reason))
    return { reason, lab: undefined as never, worker: undefined as never, provider: none, containers: async () => [], close: async () => undefined, cleanupAfter: () => undefined }
  }
  const dir = mkdtempSync(join(tmpdir(), 'cf-provider-'))
  const script = await bundleTestWorker(options.entry ?? fileURLToPath(new URL('./worker.ts', import.meta.url)), join(dir, 'worker.js'))
  const lab = await startCloudflareLab({ script, bindings: { SANDBOX_LOG_LEVEL: 'error', ...options.bindings }, ...(options.durableObjects ? { durableObjects: options.durableObjects } : {}), ...(options.image ? { image: options.image } : {}), ...(options.persist ? { persist: options.persist } : {}) })
  const worker = httpWorker(lab.url.href, options.headers)
  const previewHostname = `localhost:${lab.url.port}`
  const close = async () => {
    await lab.close()
    rmSync(dir, { recursive: true, force: true })
  }
  return {
    reason,
    lab,
    worker,
    provider: (options = {}) => remoteProvider({ worker, workerUrl: lab.url.href, options: { killGraceMs: 500, previewHostname, timeoutMs: 150_000, ...options } }),
    containers: () => lab.containers(),
    close,
    cleanupAfter: () =>
      afterAll(async () => {
        await close()
        expect(await lab.containers(), 'every container of the suite was removed').toEqual([])
      }, 180_000),
  }
}

const CORE = fileURLToPath(new URL('../../../ai-sandbox/src/', import.meta.url))

/**
 * Bundle a test Worker for workerd as the lab's `bundleWorker` does (neutral
 * platform, the `workerd` and `worker` conditions, `cloudflare:*` and
 * `node:*` left to the runtime), with `@tanstack/ai-sandbox` taken from its
 * sources, as every other suite of the repository does, so the Worker never
 * runs a stale build of core.
 */
async function bundleTestWorker(entry: string, outFile: string): Promise<string> {
  await build({
    entryPoints: [entry],
    outfile: outFile,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['workerd', 'worker', 'import'],
    external: ['cloudflare:*', 'node:*', 'vitest'],
    alias: { '@tanstack/ai-sandbox/internal': `${CORE}internal.ts`, '@tanstack/ai-sandbox': `${CORE}index.ts` },
    logLevel: 'warning',
  })
  return outFile
}
