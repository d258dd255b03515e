// The shared provider contract, run against dockerSandbox on the Debian image
// (bash, git, node); the BusyBox run is conformance.busybox.test.ts, a file of
// its own so the two run side by side. Skips naming the engine when it is not
// answering, and fails instead under REQUIRE_DOCKER=1.
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { RUN_LABEL, useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker provider conformance: debian', await dockerMissing([DEBIAN_IMAGE], { needsBridge: false }), () => {
  const { docker, labels } = useDockerSandboxes('conformance')
  // What of the provider is left: the containers carrying this file's label (the kit asserts destroy() removes them).
  const listResources = async () =>
    (await docker.listContainers({ all: true, filters: { label: [`${RUN_LABEL}=${labels[RUN_LABEL]}`] } })).map((container) => `container ${container.Id.slice(0, 12)}`)
  runSandboxProviderConformance(`docker ${DEBIAN_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: DEBIAN_IMAGE, labels, killGraceMs: 500 }),
    listResources,
  })
})
