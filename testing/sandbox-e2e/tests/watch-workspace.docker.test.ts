/**
 * File events on the Docker provider, which has no native watcher: the
 * portable find + stat poll on BusyBox and on Debian (GNU) tools, through
 * watchWorkspace and through chat() runs (sandbox.file chunks and file.changed
 * diffs; a git workspace on Debian, add-patches on BusyBox, which has no git),
 * and a later run of a thread, whose diffs start at that run's start on Debian.
 * Every container carries a label unique to this file; afterwards none may
 * remain. Skips naming the engine when it is missing; fails under REQUIRE_DOCKER=1.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect } from 'vitest'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { pollFileEventCases } from '@testing/support/file-event-cases'

const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `watch-${randomUUID().slice(0, 8)}` }
const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
const reason = await dockerMissing([BUSYBOX, DEBIAN], { needsBridge: false })

describeWithDocker('file events on Docker (poll)', reason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  for (const [name, image] of [
    ['BusyBox', BUSYBOX],
    ['Debian', DEBIAN],
  ] as const) {
    describe(`${name} image`, () => {
      pollFileEventCases(`docker-${name.toLowerCase()}`, dockerSandbox({ image, labels: RUN, killGraceMs: 500 }), image === DEBIAN)
    })
  }
})
