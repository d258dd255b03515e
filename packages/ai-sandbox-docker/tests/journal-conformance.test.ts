// The run journal's contract, run against dockerSandbox on the Debian image
// (GNU coreutils) and on the BusyBox image (BusyBox tail, base64, dd, find,
// date; `tail -f` polls once a second there). Journals go to the default
// /tmp/tanstack-runs inside each container. Skips naming the engine when it is
// not answering, and fails instead under REQUIRE_DOCKER=1; no container with
// this file's label is left afterwards.
import { runJournalConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker } from './helpers/engine.js'
import { useDockerSandboxes } from './helpers/sandboxes.js'

await describeWithDocker('docker journal conformance', [DEBIAN_IMAGE, BUSYBOX_IMAGE], () => {
  const { labels } = useDockerSandboxes('journal-conformance')
  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    runJournalConformance(`docker ${image}`, {
      makeProvider: () => dockerSandbox({ image, labels, killGraceMs: 500 }),
    })
  }
})
