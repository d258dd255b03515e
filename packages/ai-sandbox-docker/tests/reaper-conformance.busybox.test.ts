// The reaper's contract (probeRunExit, reapDetachedRuns, reclaimSandbox,
// pruneJournals) run against dockerSandbox on the BusyBox image with core's
// in-memory stores, as reaper-conformance.test.ts does on Debian. Skips naming
// the engine when it is not answering, and fails instead under
// REQUIRE_DOCKER=1; no container with this file's label is left afterwards.
import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, describeWithDocker } from './helpers/engine.js'
import { useDockerSandboxes } from './helpers/sandboxes.js'

await describeWithDocker('docker reaper conformance: busybox', [BUSYBOX_IMAGE], () => {
  const { labels } = useDockerSandboxes('reaper-conformance-busybox')
  runReaperConformance(`docker ${BUSYBOX_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: BUSYBOX_IMAGE, labels, killGraceMs: 500 }),
  })
})
