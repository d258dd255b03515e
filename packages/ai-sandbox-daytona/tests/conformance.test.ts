// The shared provider contract, run against daytonaSandbox on the Daytona
// stand-in (the real @daytona/sdk, a real container per sandbox from the
// tanstack-sandbox-daytona image). Skips naming the engine when it is not
// answering, and fails instead under REQUIRE_DOCKER=1.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { describeWithDocker } from '@testing/support/docker-engine'
import { daytonaLab } from './helpers/standin.js'

const lab = await daytonaLab('conformance')

describeWithDocker('daytona provider conformance', lab.reason, () => {
  lab.cleanupAfter()
  runSandboxProviderConformance('daytona (stand-in)', {
    makeProvider: () => lab.provider(),
    listResources: async () => lab.containers().map((id) => `sandbox container ${id.slice(0, 12)}`),
  })
})
