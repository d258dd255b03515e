// The run journal's contract, run against dockerSandbox on the BusyBox image
// (BusyBox tail, base64, dd, find, date; `tail -f` polls once a second there);
// the Debian run is journal-conformance.test.ts. Journals go to the default
// /tmp/tanstack-runs inside each container. Skips naming the engine when it is
// not answering, and fails instead under REQUIRE_DOCKER=1; no container with
// this file's label is left afterwards.
import { runJournalConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker journal conformance: busybox', await dockerMissing([BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const { labels } = useDockerSandboxes('journal-conformance-busybox')
  runJournalConformance(`docker ${BUSYBOX_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: BUSYBOX_IMAGE, labels, killGraceMs: 500 }),
  })
})
