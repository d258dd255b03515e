// The shared provider contract, run against dockerSandbox on the Debian image
// (bash, git, node); the BusyBox run is conformance.busybox.test.ts, a file of
// its own so the two run side by side. Skips naming the engine when it is not
// answering, and fails instead under REQUIRE_DOCKER=1.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { DEBIAN_IMAGE, describeWithDocker } from './helpers/engine.js'
import { useDockerSandboxes } from './helpers/sandboxes.js'

await describeWithDocker('docker provider conformance: debian', [DEBIAN_IMAGE], () => {
  const { labels } = useDockerSandboxes('conformance')
  runSandboxProviderConformance(`docker ${DEBIAN_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: DEBIAN_IMAGE, labels, killGraceMs: 500 }),
  })
})
