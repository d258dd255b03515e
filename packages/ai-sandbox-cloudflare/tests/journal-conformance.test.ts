// The run journal's contract (core's runJournalConformance) against
// cloudflareSandbox inside workerd (Miniflare), the real @cloudflare/sandbox
// Durable Object driving stand-in containers: journals in the default
// /tmp/tanstack-runs inside the sandbox, read by following (the provider
// spawns over the SDK's process API and kills through the group killer). The
// cases share one container (the kit replaces it after a failed case). Skips
// naming the engine or image when missing, and fails instead under
// REQUIRE_DOCKER=1.
import { runJournalConformance } from '@tanstack/ai-sandbox/testkit'
import { describeWithDocker } from '@testing/support/docker-engine'
import { cloudflareTestLab } from './helpers/lab.js'

const lab = await cloudflareTestLab()

describeWithDocker('cloudflare journal conformance', lab.reason, () => {
  lab.cleanupAfter()
  // A case's first call starts its container (about 6 s in workerd); the default 30 s per case leaves room for it.
  runJournalConformance('cloudflare (stand-in)', { makeProvider: () => lab.provider(), timeoutMs: 90_000 })
})
