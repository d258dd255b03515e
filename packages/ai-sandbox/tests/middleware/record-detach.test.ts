// A detach is stamped once: the disconnect notification and the teardown of
// the same detach both record it, and the reaper's TTL must count from the
// first (when the client left), not restart at the second.
import { InMemoryRunStore } from '@tanstack/ai'
import { describe, expect, it } from 'vitest'
import { recordDetach } from '../../src/middleware/durability.js'

describe('recordDetach', () => {
  it('keeps the first detachedSince of a run already marked detached, and still writes the sandbox key', async () => {
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    await recordDetach(runs, 'r', 'key-1', undefined)
    const first = (await runs.get('r'))?.detachedSince
    expect(first).toBeTypeOf('number')
    await new Promise((resolve) => setTimeout(resolve, 5))
    await recordDetach(runs, 'r', 'key-2', undefined)
    expect(await runs.get('r')).toMatchObject({ detachedSince: first, sandboxKey: 'key-2' })
  })

  it('stamps a new detach after the previous one was cleared (the run was taken up again)', async () => {
    const runs = new InMemoryRunStore()
    await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    await runs.update('r', { detachedSince: 10 })
    await runs.update('r', { detachedSince: undefined })
    await recordDetach(runs, 'r', 'key', undefined)
    expect((await runs.get('r'))?.detachedSince).toBeGreaterThan(10)
  })
})
