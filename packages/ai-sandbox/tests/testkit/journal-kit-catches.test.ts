// The journal kit fails a provider that breaks the follow rule: a provider
// that advertises killableProcesses but whose kill() does nothing leaves the
// reader's `tail` running, and checkJournalFollowAbortLeavesNoTail says so.
// Whatever the broken provider leaked is killed afterwards and checked gone.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { SandboxProvider } from '../../src/contracts/index.js'
import { checkJournalFollowAbortLeavesNoTail, createJournalConformanceContext } from '../../src/testkit/index.js'
import { NAIVE_TAG_ENV, naiveHostProvider } from './naive-host-provider.js'

const root = mkdtempSync(join(tmpdir(), 'journal-kit-catches-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Live host processes carrying `NAIVE_HOST_RUN=<tag>`. */
function tagged(tag: string): number[] {
  const needle = Buffer.from(`\0${NAIVE_TAG_ENV}=${tag}\0`)
  return readdirSync('/proc')
    .filter((name) => {
      try {
        return /^\d+$/.test(name) && Buffer.concat([Buffer.from([0]), readFileSync(`/proc/${name}/environ`)]).includes(needle)
      } catch {
        return false
      }
    })
    .map(Number)
}

/** The naive provider with a SpawnedProcess.kill() that resolves without signalling anything. */
function noopKill(tag: string): SandboxProvider {
  const provider = naiveHostProvider(tag)
  return {
    ...provider,
    create: async (input) => {
      const handle = await provider.create(input)
      const spawn: typeof handle.process.spawn = async (command, options) => ({ ...(await handle.process.spawn(command, options)), kill: async () => undefined })
      return { ...handle, process: { ...handle.process, spawn } }
    },
  }
}

const onLinux = process.platform === 'linux' ? describe : describe.skip

onLinux('the journal kit catches a follow whose tail outlives its reader', () => {
  it('checkJournalFollowAbortLeavesNoTail fails naming the rule', async () => {
    const tag = randomUUID()
    const context = await createJournalConformanceContext(noopKill(tag), { dir: join(root, 'journals'), timeoutMs: 20_000 })
    let failure: unknown
    try {
      await checkJournalFollowAbortLeavesNoTail(context)
    } catch (error) {
      failure = error
    } finally {
      await context.cleanup()
    }
    expect(String(failure)).toMatch(/no tail outlives an aborted reader/)
    // The leaked tail and the agent still waiting for its marker: kill them, then nothing is left.
    for (const pid of tagged(tag)) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone meanwhile
      }
    }
    for (let i = 0; i < 50 && tagged(tag).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(tagged(tag)).toEqual([])
  }, 30_000)
})
