// Portable snapshots (capture and restore) run against localProcessSandbox.
// Its shell runs on the host, whose /tmp other programs share, so the kit's
// check for leftover scratch folders there is off; the sandboxes' root is
// checked empty, then removed, after the suite. The cross-provider run is in
// the Docker provider's suites.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runSandboxSnapshotConformance } from '@tanstack/ai-sandbox/testkit'
import { localProcessSandbox } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'lp-snapshot-conformance-'))

runSandboxSnapshotConformance('local-process', { makeProvider: () => localProcessSandbox({ root }), privateTmp: false })

afterAll(() => {
  expect(readdirSync(root), 'every sandbox folder was removed').toEqual([])
  rmSync(root, { recursive: true, force: true })
  expect(existsSync(root)).toBe(false)
})
