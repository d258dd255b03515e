// The run reaper's contract (core's runReaperConformance) against daytonaSandbox on
// the Daytona stand-in: journals in the default /tmp/tanstack-runs inside each
// sandbox, read by following (the provider can spawn and kill). Skips naming
// the engine when it is not answering, and fails instead under REQUIRE_DOCKER=1.
import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
import { describeWithDocker } from '@testing/support/docker-engine'
import { daytonaLab } from './helpers/standin.js'

const lab = await daytonaLab('reaper-conformance')

describeWithDocker('daytona reaper conformance', lab.reason, () => {
  lab.cleanupAfter()
  runReaperConformance('daytona (stand-in)', { makeProvider: () => lab.provider() })
})
