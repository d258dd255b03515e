// The reaper's contract (probeRunExit, reapDetachedRuns, reclaimSandbox,
// pruneJournals) run against localProcessSandbox with core's in-memory stores:
// real detached withSandbox runs of a journaled scripted agent. Its shell runs
// on the host, so the journal folder is one of this suite's temp root; the root
// (sandboxes and journals) is checked empty, then removed, after the suite.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
import { localProcessSandbox } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'lp-reaper-conformance-'))
const sandboxes = join(root, 'sandboxes')
const journals = join(root, 'journals')
mkdirSync(sandboxes)

runReaperConformance('local-process', {
  makeProvider: () => localProcessSandbox({ root: sandboxes }),
  journalDir: journals,
})

afterAll(() => {
  expect(readdirSync(sandboxes), 'every sandbox folder was removed').toEqual([])
  expect(existsSync(journals) ? readdirSync(journals) : [], 'no journal, sidecar or long-id folder is left').toEqual([])
  rmSync(root, { recursive: true, force: true })
  expect(existsSync(root)).toBe(false)
})
