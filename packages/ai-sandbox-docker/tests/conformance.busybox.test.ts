// The shared provider contract, run against dockerSandbox on the BusyBox
// image, where the git and live-port checks skip, naming the missing tool (the
// Debian run is conformance.test.ts). Skips naming the engine when it is not
// answering, and fails instead under REQUIRE_DOCKER=1.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, describeWithDocker } from './helpers/engine.js'
import { useDockerSandboxes } from './helpers/sandboxes.js'

await describeWithDocker('docker provider conformance: busybox', [BUSYBOX_IMAGE], () => {
  const { labels } = useDockerSandboxes('conformance-busybox')
  runSandboxProviderConformance(`docker ${BUSYBOX_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: BUSYBOX_IMAGE, labels, killGraceMs: 500 }),
  })
})
