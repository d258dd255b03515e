// Portable snapshots (capture and restore) run against dockerSandbox on the
// BusyBox image, whose find, tar, xargs and base64 are the smallest the
// engine supports, with local-process (GNU tools) as the peer: archives made
// by BusyBox tar are read on the host and archives made on the host are
// extracted by BusyBox tar. The Debian run is snapshot-conformance.test.ts.
// Skips naming the engine when it is not answering, and fails instead under
// REQUIRE_DOCKER=1; no container with this file's label, and no sandbox
// folder of the peer, is left afterwards.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runSandboxSnapshotConformance } from '@tanstack/ai-sandbox/testkit'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { dockerSandbox } from '../src/index.js'
import { BUSYBOX_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker portable snapshots: busybox', await dockerMissing([BUSYBOX_IMAGE], { needsBridge: false }), () => {
  const { labels } = useDockerSandboxes('snapshot-conformance-busybox')
  const root = mkdtempSync(join(tmpdir(), 'docker-snapshot-peer-'))
  runSandboxSnapshotConformance(`docker ${BUSYBOX_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: BUSYBOX_IMAGE, labels, killGraceMs: 500 }),
    peer: { name: 'local-process', makeProvider: () => localProcessSandbox({ root }) },
  })
  afterAll(() => {
    expect(readdirSync(root), 'every local-process sandbox folder was removed').toEqual([])
    rmSync(root, { recursive: true, force: true })
    expect(existsSync(root)).toBe(false)
  })
})
