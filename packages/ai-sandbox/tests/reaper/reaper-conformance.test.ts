// The reaper kit over the naive host provider (real `sh` children on the
// host, real journals in a temp folder) with core's in-memory stores. The
// journal folder is checked empty afterwards, and no process of the run is left.
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect } from 'vitest'
import { runReaperConformance } from '../../src/testkit/index.js'
import { memoryProvider } from '../testkit/memory-provider.js'
import { naiveHostProvider, naiveTaggedProcesses } from '../testkit/naive-host-provider.js'

const root = mkdtempSync(join(tmpdir(), 'reaper-kit-test-'))
const tag = randomUUID()

runReaperConformance('in-memory fake (no exec)', { makeProvider: () => memoryProvider() })
runReaperConformance('naive host provider', { makeProvider: () => naiveHostProvider(tag), journalDir: join(root, 'journals') })

afterAll(async () => {
  const dir = join(root, 'journals')
  expect(existsSync(dir) ? readdirSync(dir) : [], 'no journal is left').toEqual([])
  rmSync(root, { recursive: true, force: true })
  expect(await naiveTaggedProcesses(tag), 'no process of the naive provider is left').toEqual([])
})
