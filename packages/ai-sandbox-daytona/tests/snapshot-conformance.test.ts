// Portable snapshots (capture and restore) against daytonaSandbox on the
// Daytona stand-in (the real @daytona/sdk, a container per sandbox), with
// local-process as the cross-provider peer: a tree captured in a Daytona
// sandbox restores on the host byte for byte, and the reverse. Skips naming
// the engine when it is not answering, and fails instead under
// REQUIRE_DOCKER=1; no container of this file, and no peer folder, is left.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runSandboxSnapshotConformance } from '@tanstack/ai-sandbox/testkit'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describeWithDocker } from '@testing/support/docker-engine'
import { daytonaLab } from './helpers/standin.js'

const lab = await daytonaLab('snapshot-conformance')

describeWithDocker('daytona portable snapshots', lab.reason, () => {
  lab.cleanupAfter()
  const root = mkdtempSync(join(tmpdir(), 'daytona-snapshot-peer-'))
  runSandboxSnapshotConformance('daytona (stand-in)', {
    makeProvider: () => lab.provider(),
    peer: { name: 'local-process', makeProvider: () => localProcessSandbox({ root }) },
    // The stream itself is proven at 2000 files on Docker and local-process; here it is this transport's turn.
    largeTreeFiles: 500,
  })
  afterAll(() => {
    expect(readdirSync(root), 'every local-process sandbox folder was removed').toEqual([])
    rmSync(root, { recursive: true, force: true })
    expect(existsSync(root)).toBe(false)
  })
})
