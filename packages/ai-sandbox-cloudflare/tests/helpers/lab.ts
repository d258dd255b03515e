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
import { remoteProvider } from './remote-handle.js'
import type { TestWorkerApi } from './remote-handle.js'
import { decodeJson, encodeJson } from './wire.js'
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
  /** Register the after-suite hook: lab closed, nothing left. Call inside the describe. */
  cleanupAfter: () => void
}

/** Bundle the test Worker and start a lab on it (when the engine and the image are there). */
export async function cloudflareTestLab(): Promise<CloudflareTestLab> {
  const reason = (await cloudflareMissing()) ?? null
  if (reason !== null) {
    const none = async () => Promise.reject(new Error(reason))
    return { reason, lab: undefined as never, worker: undefined as never, provider: none, containers: async () => [], cleanupAfter: () => undefined }
  }
  const dir = mkdtempSync(join(tmpdir(), 'cf-provider-'))
  const script = await bundleTestWorker(join(dir, 'worker.js'))
  const lab = await startCloudflareLab({ script, bindings: { SANDBOX_LOG_LEVEL: 'error' } })
  const worker = httpWorker(lab.url.href)
  const previewHostname = `localhost:${lab.url.port}`
  return {
    reason,
    lab,
    worker,
    provider: (options = {}) => remoteProvider({ worker, workerUrl: lab.url.href, options: { killGraceMs: 500, previewHostname, timeoutMs: 150_000, ...options } }),
    containers: () => lab.containers(),
    cleanupAfter: () =>
      afterAll(async () => {
        await lab.close()
        rmSync(dir, { recursive: true, force: true })
        expect(await lab.containers(), 'every container of the suite was removed').toEqual([])
      }, 180_000),
  }
}

const CORE = fileURLToPath(new URL('../../../ai-sandbox/src/', import.meta.url))

/**
 * Bundle worker.ts for workerd as the lab's `bundleWorker` does (neutral
 * platform, the `workerd` and `worker` conditions, `cloudflare:*` and
 * `node:*` left to the runtime), with `@tanstack/ai-sandbox` taken from its
 * sources, as every other suite of the repository does, so the Worker never
 * runs a stale build of core.
 */
async function bundleTestWorker(outFile: string): Promise<string> {
  await build({
    entryPoints: [fileURLToPath(new URL('./worker.ts', import.meta.url))],
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

/**
 * The test Worker's methods over `POST /__rpc/<method>` with Node's own
 * fetch: asynchronous, so an abort or a kill reaches the Worker while an
 * exec is still running.
 */
function httpWorker(base: string): TestWorkerApi {
  return new Proxy({} as TestWorkerApi, {
    get: (_target, method) => async (...args: unknown[]) => {
      const response = await fetch(new URL(`__rpc/${String(method)}`, base), { method: 'POST', body: encodeJson(args) })
      if (!response.ok) throw new Error(`test worker: ${String(method)} answered HTTP ${response.status}: ${await response.text()}`)
      if (method === 'spawn') return response.body
      return decodeJson(await response.text())
    },
  })
}
