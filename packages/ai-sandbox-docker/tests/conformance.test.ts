// The shared provider contract, run against dockerSandbox on the Debian image
// (bash, git, node) and on the BusyBox image (where the git and live-port
// checks skip, naming the missing tool). Skips naming the engine when it is
// not answering, and fails instead under REQUIRE_DOCKER=1.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, DEBIAN_IMAGE, describeWithDocker } from './helpers/engine.js'
import { useDockerSandboxes } from './helpers/sandboxes.js'

await describeWithDocker('docker provider conformance', [DEBIAN_IMAGE, BUSYBOX_IMAGE], () => {
  const { labels } = useDockerSandboxes('conformance')
  for (const image of [DEBIAN_IMAGE, BUSYBOX_IMAGE]) {
    runSandboxProviderConformance(`docker ${image}`, {
      makeProvider: () => dockerSandbox({ image, labels, killGraceMs: 500 }),
    })
  }
})
