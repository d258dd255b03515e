// The reaper's contract (probeRunExit, reapDetachedRuns, reclaimSandbox,
// pruneJournals) run against dockerSandbox on the Debian image (GNU coreutils)
// and on the BusyBox image, with core's in-memory stores: real detached
// withSandbox runs of a journaled scripted agent, journals in the default
// /tmp/tanstack-runs inside each container. Skips naming the engine when it is
// not answering, and fails instead under REQUIRE_DOCKER=1; no container with
// this file's label is left afterwards.
import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker } from './helpers/engine.js'
import { useDockerSandboxes } from './helpers/sandboxes.js'

await describeWithDocker('docker reaper conformance', [DEBIAN_IMAGE, BUSYBOX_IMAGE], () => {
  const { labels } = useDockerSandboxes('reaper-conformance')
  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    runReaperConformance(`docker ${image}`, {
      makeProvider: () => dockerSandbox({ image, labels, killGraceMs: 500 }),
    })
  }
})
