/**
 * The local launcher's build of the Worker: src/worker.ts and everything it
 * imports in one ESM file that workerd loads, made with
 * `@testing/cloudflare-standin`'s `bundleWorker`, as the test Workers are
 * (neutral platform, the `workerd` and `worker` package conditions,
 * `cloudflare:*` and `node:*` left to the runtime), plus the `text` loader for
 * the page, which a deploy gets from wrangler's default `Text` module rule.
 */
import { fileURLToPath } from 'node:url'
import { bundleWorker } from '@testing/cloudflare-standin'

/** The Worker's entry module. */
export const WORKER_ENTRY = fileURLToPath(new URL('./worker.ts', import.meta.url))

/**
 * Bundle src/worker.ts into `outFile` (its folder is created).
 * @returns `outFile`.
 * @throws esbuild's error when the Worker does not build (a missing `pnpm build` of the packages shows up here).
 * @example
 * const script = await bundleExampleWorker(join(tmp, 'worker.js'))
 */
export async function bundleExampleWorker(outFile: string): Promise<string> {
  return bundleWorker(WORKER_ENTRY, outFile, { loader: { '.html': 'text' } })
}
