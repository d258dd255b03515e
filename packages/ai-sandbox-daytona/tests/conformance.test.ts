// The shared provider contract, run against daytonaSandbox on the Daytona
// stand-in (the real @daytona/sdk, a real container per sandbox from the
// tanstack-sandbox-daytona image). Skips naming the engine when it is not
// answering, and fails instead under REQUIRE_DOCKER=1.
// The fs group's symlink-swap races make CONFORMANCE_FS_RACE_CALLS calls per
// operation and go on for CONFORMANCE_FS_RACE_BUDGET_MS after those (CI and
// default 10 calls and 0 ms; `pnpm soak` the kit's defaults, 30 calls and
// 2 000 ms): the confinement they race is core's FS_SCRIPT, which the Docker
// Debian suite races at the kit's defaults (BusyBox at 30 calls), and the stand-in runs
// on Debian like the Docker Debian image. Each race runs a busy swapper loop
// in the container.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { describeWithDocker } from '@testing/support/docker-engine'
import { daytonaLab } from './helpers/standin.js'

const lab = await daytonaLab('conformance')

describeWithDocker('daytona provider conformance', lab.reason, () => {
  lab.cleanupAfter()
  runSandboxProviderConformance('daytona (stand-in)', {
    makeProvider: () => lab.provider(),
    listResources: async () => lab.containers().map((id) => `sandbox container ${id.slice(0, 12)}`),
    fsRaceCalls: Number(process.env.CONFORMANCE_FS_RACE_CALLS ?? 10),
    fsRaceBudgetMs: Number(process.env.CONFORMANCE_FS_RACE_BUDGET_MS ?? 0),
  })
})
