// The shared provider contract, run against cloudflareSandbox inside workerd
// (Miniflare) with the real @cloudflare/sandbox Durable Object driving
// stand-in containers: every call goes through the test Worker's RPC methods.
// Skips naming the engine or image when missing, and fails instead under
// REQUIRE_DOCKER=1.
// The fs group's symlink-swap races make CONFORMANCE_FS_RACE_CALLS calls per
// operation and go on for CONFORMANCE_FS_RACE_BUDGET_MS after those (CI and
// default 10 calls and 0 ms; `pnpm soak` the kit's defaults, 30 calls and
// 2 000 ms): the confinement they race is core's FS_SCRIPT, which the Docker
// Debian suite races at the kit's defaults (BusyBox at 30 calls), and the stand-in runs
// on Debian like the Docker Debian image. Each race runs a busy swapper loop
// in the container.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { describeWithDocker } from '@testing/support/docker-engine'
import { cloudflareTestLab } from './helpers/lab.js'

const lab = await cloudflareTestLab()

describeWithDocker('cloudflare provider conformance', lab.reason, () => {
  lab.cleanupAfter()
  runSandboxProviderConformance('cloudflare (stand-in)', {
    makeProvider: () => lab.provider(),
    listResources: () => lab.containers(),
    // Each container start costs about 6 s in workerd; a race case makes 30+ round trips at the soak's count.
    timeoutMs: 180_000,
    fsRaceCalls: Number(process.env.CONFORMANCE_FS_RACE_CALLS ?? 10),
    fsRaceBudgetMs: Number(process.env.CONFORMANCE_FS_RACE_BUDGET_MS ?? 0),
    // Cloudflare exposes ports 1024-65535 except 3000 (its control server listens there).
    connectPort: 8080,
  })
})
