// The shared provider contract, run against dockerSandbox on the BusyBox
// image, where the git and live-port checks skip, naming the missing tool (the
// Debian run is conformance.test.ts). Skips naming the engine when it is not
// answering, and fails instead under REQUIRE_DOCKER=1.
// The fs group's symlink-swap races make CONFORMANCE_FS_RACE_CALLS calls per
// operation (default the kit's 30) and go on for CONFORMANCE_FS_RACE_BUDGET_MS
// after those (CI and default 0 ms; `pnpm soak` the kit's 2 000): BusyBox's
// ash runs core's FS_SCRIPT here, and the Debian suite races the same script
// under dash for the kit's full 2 s per operation.
const fsRaceCalls = Number(process.env.CONFORMANCE_FS_RACE_CALLS ?? 30)
const fsRaceBudgetMs = Number(process.env.CONFORMANCE_FS_RACE_BUDGET_MS ?? 0)
import { runSandboxProviderConformance } from '@tanstack/ai-sandbox/testkit'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { RUN_LABEL, useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker provider conformance: busybox', await dockerMissing([BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const { docker, labels } = useDockerSandboxes('conformance-busybox')
  // What of the provider is left: the containers carrying this file's label (the kit asserts destroy() removes them).
  const listResources = async () =>
    (await docker.listContainers({ all: true, filters: { label: [`${RUN_LABEL}=${labels[RUN_LABEL]}`] } })).map((container) => `container ${container.Id.slice(0, 12)}`)
  runSandboxProviderConformance(`docker ${BUSYBOX_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: BUSYBOX_IMAGE, labels, killGraceMs: 500 }),
    listResources,
    fsRaceCalls,
    fsRaceBudgetMs,
  })
})
