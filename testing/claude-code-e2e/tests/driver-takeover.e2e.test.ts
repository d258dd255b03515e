/**
 * Takeover across OS processes with the real Claude Code CLI against aimock,
 * on local-process sandboxes (spec 000 "Takeover: detached runs and
 * single-writer safety"). Each server is its own Node process
 * (`src/run-server.ts`) over one SQLite database
 * (`@tanstack/ai-sandbox-sqlite`): runs, leased locks, sandbox instances and
 * the event log. A trial POSTs a run to a fresh server, SIGKILLs that server
 * once the client has read K events (K drawn from a printed seed, from the
 * first event on, so a kill before the agent launched is covered too), and
 * reconnects the client to another server from its last event id; that
 * server's `sandboxRunDriver` takes the run over (`attach: true`). The
 * transcript the client assembled must equal a control run of the same turn
 * chunk for chunk (normalized fingerprints): 0 lost, 0 duplicated, 0 false
 * terminals; one CLI ran (five model requests); the record is `completed`
 * with `driverEpoch` 1; journal, processes and sandbox are gone. Concurrent
 * attaches, refreshes and cancels from another process run here too.
 *
 * Counts (`helpers/takeover-suite.ts`): `TAKEOVER_TRIALS` (CI 1, full 10),
 * `TAKEOVER_CONCURRENT` (CI 1, full 3), `TAKEOVER_REFRESHES` (CI 1, full 3),
 * `TAKEOVER_CANCELS` (CI 2, full 25); `TAKEOVER_SEED` replays a printed run.
 * The full counts and the 200-kill soak are `pnpm soak`. The same trials in
 * Docker sandboxes are `driver-takeover.docker.e2e.test.ts`.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect } from 'vitest'
import { claudeBinary, makeClaudeHome } from '../src/aimock.js'
import { CANCELS, CONCURRENT, REFRESHES, takeoverSuite } from './helpers/takeover-suite.js'

const localRoot = mkdtempSync(join(tmpdir(), 'driver-takeover-sandboxes-'))
afterAll(() => {
  const left = readdirSync(localRoot)
  rmSync(localRoot, { recursive: true, force: true })
  expect(left, 'every local-process sandbox folder is removed').toEqual([])
})

describe('takeover across processes with the real claude CLI on local-process', () => {
  takeoverSuite({
    name: 'local-process',
    provider: { kind: 'local-process', root: localRoot },
    modelHost: () => Promise.resolve('127.0.0.1'),
    claude: (model) => {
      const home = makeClaudeHome('driver-takeover-home')
      return { options: { executable: claudeBinary(), env: home.env(model.url) }, home: home.dir, cleanup: home.cleanup }
    },
    sandboxesLeft: () => Promise.resolve(readdirSync(localRoot)),
    seedOffset: 0,
    concurrentTrials: CONCURRENT,
    cancels: CANCELS,
    refreshTrials: REFRESHES,
  })
})
