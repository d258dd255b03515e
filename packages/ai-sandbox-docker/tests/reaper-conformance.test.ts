// The reaper's contract (probeRunExit, reapDetachedRuns, reclaimSandbox,
// pruneJournals) run against dockerSandbox on the Debian image (GNU coreutils)
// with core's in-memory stores: real detached withSandbox runs of a journaled
// scripted agent, journals in the default /tmp/tanstack-runs inside each
// container. The BusyBox run is reaper-conformance.busybox.test.ts. Skips
// naming the engine when it is not answering, and fails instead under
// REQUIRE_DOCKER=1; no container with this file's label is left afterwards.
import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker reaper conformance: debian', await dockerMissing([DEBIAN_IMAGE], { needsBridge: false }), () => {
  const { labels } = useDockerSandboxes('reaper-conformance')
  runReaperConformance(`docker ${DEBIAN_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: DEBIAN_IMAGE, labels, killGraceMs: 500 }),
  })
})
