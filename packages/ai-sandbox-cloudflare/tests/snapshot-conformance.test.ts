// Portable snapshots (capture and restore) against cloudflareSandbox inside
// workerd with the real @cloudflare/sandbox Durable Object driving stand-in
// containers, with local-process as the cross-provider peer: a tree captured
// in a Cloudflare sandbox restores on the host byte for byte, and the
// reverse. Cloudflare's spawned processes have no stdin; the engine only
// needs exec's. Skips naming the engine or image when missing, and fails
// instead under REQUIRE_DOCKER=1; no container of this file, and no peer
// folder, is left.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runSandboxSnapshotConformance } from '@tanstack/ai-sandbox/testkit'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { describeWithDocker } from '@testing/support/docker-engine'
import { cloudflareTestLab } from './helpers/lab.js'

const lab = await cloudflareTestLab()

describeWithDocker('cloudflare portable snapshots', lab.reason, () => {
  lab.cleanupAfter()
  const root = mkdtempSync(join(tmpdir(), 'cloudflare-snapshot-peer-'))
  runSandboxSnapshotConformance('cloudflare (stand-in)', {
    makeProvider: () => lab.provider(),
    peer: { name: 'local-process', makeProvider: () => localProcessSandbox({ root }) },
    // The stream itself is proven at 2000 files on Docker and local-process; here it is this transport's turn.
    largeTreeFiles: 500,
    // Each container start costs about 6 s in workerd.
    timeoutMs: 180_000,
  })
  afterAll(() => {
    expect(readdirSync(root), 'every local-process sandbox folder was removed').toEqual([])
    rmSync(root, { recursive: true, force: true })
    expect(existsSync(root)).toBe(false)
  })
})
