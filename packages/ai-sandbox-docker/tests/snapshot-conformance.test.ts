// Portable snapshots (capture and restore) run against dockerSandbox on the
// Debian image (GNU find and tar), with local-process as the peer: the
// fixture captured in a container restores on the host byte for byte, and
// the reverse. The BusyBox run is snapshot-conformance.busybox.test.ts.
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
import { DEBIAN_IMAGE, describeWithDocker, dockerMissing } from '@testing/support/docker-engine'
import { useDockerSandboxes } from './helpers/sandboxes.js'

describeWithDocker('docker portable snapshots: debian', await dockerMissing([DEBIAN_IMAGE], { needsBridge: false }), () => {
  const { labels } = useDockerSandboxes('snapshot-conformance')
  const root = mkdtempSync(join(tmpdir(), 'docker-snapshot-peer-'))
  runSandboxSnapshotConformance(`docker ${DEBIAN_IMAGE}`, {
    makeProvider: () => dockerSandbox({ image: DEBIAN_IMAGE, labels, killGraceMs: 500 }),
    peer: { name: 'local-process', makeProvider: () => localProcessSandbox({ root }) },
  })
  afterAll(() => {
    expect(readdirSync(root), 'every local-process sandbox folder was removed').toEqual([])
    rmSync(root, { recursive: true, force: true })
    expect(existsSync(root)).toBe(false)
  })
})
