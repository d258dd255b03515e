// The shared provider contract, run against cloudflareSandbox inside workerd
// (Miniflare) with the real @cloudflare/sandbox Durable Object driving
// stand-in containers: every call goes through the test Worker's RPC methods.
// Skips naming the engine or image when missing, and fails instead under
// REQUIRE_DOCKER=1.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { describeWithDocker } from '@testing/support/docker-engine'
import { cloudflareTestLab } from './helpers/lab.js'

const lab = await cloudflareTestLab()

describeWithDocker('cloudflare provider conformance', lab.reason, () => {
  lab.cleanupAfter()
  runSandboxProviderConformance('cloudflare (stand-in)', {
    makeProvider: () => lab.provider(),
    listResources: () => lab.containers(),
    // Each container start costs about 6 s in workerd; the race cases make 30+ round trips each.
    timeoutMs: 180_000,
    // Cloudflare exposes ports 1024-65535 except 3000 (its control server listens there).
    connectPort: 8080,
  })
})
