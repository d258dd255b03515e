/**
 * The chaos suite on local-process sandboxes over one SQLite database: every
 * named case of `helpers/chaos-suite.ts` (boundary kills, a paused host, a
 * double kill, an orphan) and `CHAOS_TRIALS` seeded random kills, with the
 * real Claude Code CLI against aimock. The same cases in Docker over
 * PostgreSQL are `chaos.docker.e2e.test.ts`.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, posix } from 'node:path'
import { afterAll, describe, expect } from 'vitest'
import { journalPaths } from '@tanstack/ai-sandbox'
import { claudeBinary, makeClaudeHome } from '../src/aimock.js'
import { ALL_CASES, chaosSuite } from './helpers/chaos-suite.js'
import { processesMatching, processesWithHome } from './helpers/run-claude.js'

const localRoot = mkdtempSync(join(tmpdir(), 'chaos-sandboxes-'))
const dir = mkdtempSync(join(tmpdir(), 'chaos-'))
const home = makeClaudeHome('chaos-home')

afterAll(() => {
  const left = readdirSync(localRoot)
  rmSync(localRoot, { recursive: true, force: true })
  rmSync(dir, { recursive: true, force: true })
  home.cleanup()
  expect(left, 'every local-process sandbox folder is removed').toEqual([])
})

describe('chaos: a run survives its host at any moment (local-process + SQLite)', () => {
  chaosSuite({
    name: 'local-process',
    stores: { kind: 'sqlite', path: join(dir, 'runs.db') },
    provider: { kind: 'local-process', root: localRoot },
    modelHost: () => Promise.resolve('127.0.0.1'),
    claude: (model) => ({ options: { executable: claudeBinary(), env: home.env(model.url) } }),
    sandboxesLeft: () => Promise.resolve(readdirSync(localRoot)),
    processesLeft: (runId) => processesMatching(`/${posix.basename(journalPaths(runId).journal)}`).length + processesWithHome(home.dir).length,
    // bootstrap and after-run-finished are the driver-takeover suites' first-event and last-event kills; `pnpm soak` runs them here too.
    cases: ALL_CASES.filter((name) => name !== 'bootstrap' && name !== 'after-run-finished'),
    seedOffset: 0,
  })
})
