// The run journal's contract, run against dockerSandbox on the Debian image
// (GNU coreutils); the BusyBox run is journal-conformance.busybox.test.ts, so
// the two run side by side. Journals go to the default /tmp/tanstack-runs
// inside each container. Skips naming the engine when it is not answering,
// and fails instead under REQUIRE_DOCKER=1; no container with this file's
// label is left afterwards.
import { runJournalConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker journal conformance: debian', await dockerMissing([DEBIAN_IMAGE], { needsBridge: false }), () => {
  const { labels } = useDockerSandboxes('journal-conformance')
  runJournalConformance(`docker ${DEBIAN_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: DEBIAN_IMAGE, labels, killGraceMs: 500 }),
  })
})
