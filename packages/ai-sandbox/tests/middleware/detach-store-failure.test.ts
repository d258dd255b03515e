/**
 * Issue 29, where the spec is silent: a run must never be left in a state no
 * sweep can reach. When the run store fails the detach write on `onAbort`
 * (a disconnect), the record lacks `detachedSince`, so `listReclaimable`
 * never lists it. Unless the stores can find orphans (the run store's
 * `listUndetachedRuns` and the lock store's `isHeld`) the sandbox is
 * destroyed instead (a lost run beats a sandbox billed for ever); when they
 * can, the run is kept, and the orphan listing finds it. An unreadable cancel probe (`wasCancelRequested` answers `false`) is a
 * detach, as spec 002 says.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { InMemoryRunStore, memoryStream, type RunRecord, type RunStore } from '@tanstack/ai'
import { InMemoryLockStore, type LockStore } from '@tanstack/ai/locks'
import { withSandbox } from '../../src/index.js'
import { agentAdapter, alive, drive, probe, sandboxLab, waitFor, type Probed } from './durability-helpers.js'
import { capturingLogger } from '../reaper/helpers.js'
import { probingLockStore } from '../helpers/probing-locks.js'

vi.setConfig({ testTimeout: 15_000 })

const lab = sandboxLab('detach-store-failure')
const started: number[] = []
afterEach(async () => {
  expect(await lab.cleanup(), 'no sandbox directory is left').toEqual([])
  expect(await waitFor(() => started.every((pid) => !alive(pid))), 'no agent process is left').toBe(true)
  started.length = 0
})

/** An in-memory run store whose writes of `detachedSince` fail (the database went away as the client left). */
class FailingDetachStore extends InMemoryRunStore {
  override async update(runId: string, patch: Parameters<RunStore['update']>[1]): Promise<void> {
    if ('detachedSince' in patch && patch.detachedSince !== undefined) throw new Error('the run store is unreachable')
    return super.update(runId, patch)
  }
}

/** The same, and it can list orphans (as the SQLite and PostgreSQL stores do). */
class FailingDetachStoreWithOrphans extends FailingDetachStore {
  private readonly ids = new Set<string>()
  override async createOrResume(input: Parameters<RunStore['createOrResume']>[0]): Promise<RunRecord> {
    this.ids.add(input.runId)
    return super.createOrResume(input)
  }
  async listUndetachedRuns({ startedBefore, limit }: { startedBefore: number; limit: number }): Promise<RunRecord[]> {
    const records = await Promise.all([...this.ids].map((id) => this.get(id)))
    return records.filter((r): r is RunRecord => r !== null && r.status === 'running' && r.detachedSince === undefined && r.startedAt <= startedBefore).slice(0, limit)
  }
}

async function disconnectMidRun(runs: RunStore, name: string, locks?: LockStore) {
  const runId = `run-${name}`
  const agent = agentAdapter({ turns: ['text'], holdTurn: 1 })
  const controller = new AbortController()
  const seen: Probed = {}
  const { logger, errors } = capturingLogger()
  await drive({
    adapter: agent.adapter,
    middleware: [withSandbox(lab.sandbox(name), { runs, ...(locks ? { locks } : {}), durability: { adapter: memoryStream({ runId }) } }), probe(seen)],
    runId,
    threadId: `thread-${name}`,
    abortController: controller,
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: (message: string) => logger.errors(message) },
    onChunk: (chunk) => {
      if (chunk.type === 'TEXT_MESSAGE_CONTENT') controller.abort() // the client left
    },
  })
  started.push(...agent.pids)
  return { runId, seen, errors }
}

describe('a detach the run store could not record', () => {
  it('on a store that cannot list orphans: the sandbox is destroyed, not left where no sweep reaches it', async () => {
    const runs = new FailingDetachStore()
    const { runId, seen, errors } = await disconnectMidRun(runs, 'no-orphan-listing')
    expect(seen.detached, 'the run is not reported detached').toBeUndefined()
    expect(await lab.exists(seen.handle), 'the sandbox was destroyed').toBe(false)
    expect((await runs.get(runId))?.detachedSince).toBeUndefined()
    expect(errors.join('\n')).toMatch(/cannot find orphans.*destroying sandbox/)
  })

  it('on stores that can find orphans but a lock store without isHeld: the sandbox is destroyed too', async () => {
    const runs = new FailingDetachStoreWithOrphans()
    const { seen, errors } = await disconnectMidRun(runs, 'no-lock-probe', new InMemoryLockStore())
    expect(await lab.exists(seen.handle), 'the sandbox was destroyed').toBe(false)
    expect(errors.join('\n')).toMatch(/cannot find orphans.*destroying sandbox/)
  })

  it('on stores that can find orphans: the run is kept, and the orphan listing finds it', async () => {
    const runs = new FailingDetachStoreWithOrphans()
    const { runId, seen, errors } = await disconnectMidRun(runs, 'orphan-listing', probingLockStore())
    expect(seen.detached).toBe(true)
    expect(await lab.exists(seen.handle), 'the sandbox and its agent are kept').toBe(true)
    expect((await runs.listUndetachedRuns({ startedBefore: Date.now(), limit: 10 })).map((r) => r.runId), 'a sweep looking for orphans finds it').toEqual([runId])
    expect(errors.join('\n')).toMatch(/recording the detach of run .* failed/)
  })
})
