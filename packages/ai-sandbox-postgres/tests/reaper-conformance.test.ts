// The reaper's contract (probeRunExit, reapDetachedRuns, reclaimSandbox,
// pruneJournals) run against localProcessSandbox with the PostgreSQL stores:
// real detached withSandbox runs of a journaled scripted agent, their records
// and logs in a fresh schema per case. The journal folder is one of this
// suite's temp root; the root is checked empty, then removed, after the suite.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runReaperConformance } from '@tanstack/ai-sandbox/testkit'
import { afterAll, expect } from 'vitest'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

describePostgres('postgres reaper kit', (url) => {
  const schemas = tempSchemas(url)
  const root = mkdtempSync(join(tmpdir(), 'pg-reaper-conformance-'))
  const sandboxes = join(root, 'sandboxes')
  const journals = join(root, 'journals')
  mkdirSync(sandboxes)

  runReaperConformance('local-process, postgres stores', {
    makeProvider: () => localProcessSandbox({ root: sandboxes }),
    makeStores: async () => {
      const stores = await schemas.open({ leaseMs: 3000 })
      return { runs: stores.runs, locks: stores.locks, log: (runId) => stores.stream({ runId }) }
    },
    journalDir: journals,
  })

  afterAll(() => {
    expect(readdirSync(sandboxes), 'every sandbox folder was removed').toEqual([])
    expect(existsSync(journals) ? readdirSync(journals) : [], 'no journal, sidecar or long-id folder is left').toEqual([])
    rmSync(root, { recursive: true, force: true })
    expect(existsSync(root)).toBe(false)
  })
})
