// The live lane (`pnpm test:live`, never `pnpm test`): the provider, journal
// and reaper kits against Cloudflare's real platform. It deploys live/worker.ts
// (live/wrangler.jsonc, Cloudflare's own container image) under a name of its
// own with `wrangler deploy`, drives the provider inside it through the test
// Worker's RPC routes with a random bearer token, and deletes the Worker
// afterwards. Needs CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID (an account
// with Containers), Docker with buildx (wrangler builds the image) and Node
// 22.12 or later (wrangler's floor); CLOUDFLARE_PREVIEW_HOSTNAME (a custom
// domain routed to the Worker) turns on the ports group. Missing credentials
// fail the lane, naming them: running it without them is a mistake, not a skip.
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { runJournalConformance, runReaperConformance, runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { httpWorker, remoteProvider } from '../tests/helpers/remote-handle.js'

/** The wrangler release the lane deploys with (fetched by npx; not a dependency of the repository). */
const WRANGLER = 'wrangler@4.164.0'
const here = fileURLToPath(new URL('.', import.meta.url))
const missing = ['CLOUDFLARE_API_TOKEN', 'CLOUDFLARE_ACCOUNT_ID'].filter((name) => !process.env[name])
const nodeMajor = Number(process.versions.node.split('.')[0])

function wrangler(args: string[]): string {
  return execFileSync('npx', ['--yes', WRANGLER, ...args], { cwd: here, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 15 * 60_000 })
}

if (missing.length > 0 || nodeMajor < 22) {
  describe('cloudflare live lane', () => {
    it('needs credentials and Node 22', () => {
      expect.fail(
        missing.length > 0
          ? `Set ${missing.join(' and ')} (an account with Containers; optionally CLOUDFLARE_PREVIEW_HOSTNAME) to run pnpm test:live against Cloudflare.`
          : `Run the live lane with Node 22.12 or later: ${WRANGLER} needs it (this is Node ${process.versions.node}).`,
      )
    })
  })
} else {
  const name = `tanstack-sandbox-live-${randomBytes(4).toString('hex')}`
  const token = randomBytes(32).toString('base64url')
  // At load: the kits read the provider's capabilities while they register their cases.
  const out = wrangler(['deploy', '--config', 'wrangler.jsonc', '--name', name, '--var', `LIVE_TOKEN:${token}`])
  const url = /https:\/\/\S+\.workers\.dev/.exec(out)?.[0]
  if (!url) {
    wrangler(['delete', '--name', name, '--force'])
    throw new Error(`wrangler deploy printed no workers.dev URL:\n${out}`)
  }
  afterAll(() => {
    wrangler(['delete', '--name', name, '--force'])
  }, 120_000)

  const provider = () =>
    remoteProvider({
      worker: httpWorker(url, { authorization: `Bearer ${token}` }),
      workerUrl: url,
      options: { ...(process.env.CLOUDFLARE_PREVIEW_HOSTNAME ? { previewHostname: process.env.CLOUDFLARE_PREVIEW_HOSTNAME } : {}), timeoutMs: 180_000 },
    })
  runSandboxProviderConformance('cloudflare (live)', { makeProvider: provider, timeoutMs: 300_000, connectPort: 8080 })
  runJournalConformance('cloudflare (live)', { makeProvider: provider, timeoutMs: 180_000 })
  runReaperConformance('cloudflare (live)', { makeProvider: provider })
}
