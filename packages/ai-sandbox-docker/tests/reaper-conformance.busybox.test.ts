// The reaper's contract (probeRunExit, reapDetachedRuns, reclaimSandbox,
// pruneJournals) run against dockerSandbox on the BusyBox image with core's
// in-memory stores, as reaper-conformance.test.ts does on Debian. Skips naming
// the engine when it is not answering, and fails instead under
// REQUIRE_DOCKER=1; no container with this file's label is left afterwards.
import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker reaper conformance: busybox', await dockerMissing([BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const { labels } = useDockerSandboxes('reaper-conformance-busybox')
  runReaperConformance(`docker ${BUSYBOX_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: BUSYBOX_IMAGE, labels, killGraceMs: 500 }),
  })
})
