/**
 * The setup shell's cwd/env carry-over when a step installs its own EXIT
 * trap, leaves with `exit` or `exec`, on the real Docker provider with
 * Debian's dash and BusyBox's ash. Cases in `helpers/setup-shell-cases.ts`.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect } from 'vitest'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { setupShellStateCases } from './helpers/setup-shell-cases.js'

const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `setup-state-${randomUUID().slice(0, 8)}` }
const reason = await dockerMissing([DEBIAN, BUSYBOX], { needsBridge: false })

describeWithDocker('setup shell state on Docker', reason, () => {
  afterAll(async () => {
    await pruneDockerSandboxes({ labels: RUN })
    expect(await dockerLeftovers(`tanstack-test.run=${RUN['tanstack-test.run']}`), 'no container, image or volume with our labels is left').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  for (const [label, image] of [['Debian', DEBIAN], ['BusyBox', BUSYBOX]] as const) {
    describe(label, () => setupShellStateCases(label.toLowerCase(), dockerSandbox({ image, labels: RUN, killGraceMs: 500 })))
  }
})
