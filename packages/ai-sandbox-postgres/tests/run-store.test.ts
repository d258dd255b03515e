// The PostgreSQL RunStore: every method core declares, the key-presence patch
// rule, the same answers as core's InMemoryRunStore for one sequence of calls,
// a corrupt row refused, and calls after close (the shared suite's cases,
// @testing/support/store-suites/run-store); and, its own, the engine-enforced
// fence (updateAtEpoch).
import { runRunStoreSuite } from '@testing/support/store-suites/run-store'
import { expect, it } from 'vitest'
import { postgresTarget } from './helpers/postgres.js'

runRunStoreSuite(postgresTarget, {
  corruptStatus: async (stores, runId, status) => void (await stores.pool.query(`UPDATE "${stores.schema}".runs SET status = $1 WHERE run_id = $2`, [status, runId])),
  own: (places) => {
    it('updateAtEpoch applies only while the stored driverEpoch is the writer\'s (unset for undefined), with the key-presence rule', async () => {
      const { runs } = await places.open()
      expect(await runs.updateAtEpoch('ghost', undefined, { status: 'completed' })).toBe(false)
      await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
      expect(await runs.updateAtEpoch('r', 1, { sandboxKey: 'nope' })).toBe(false)
      expect(await runs.updateAtEpoch('r', undefined, { sandboxKey: 'k' })).toBe(true)
      await runs.update('r', { driverEpoch: 4 })
      expect(await runs.updateAtEpoch('r', undefined, { status: 'completed' })).toBe(false)
      expect(await runs.updateAtEpoch('r', 3, { status: 'completed' })).toBe(false)
      // An empty patch still answers whether the epoch holds.
      expect(await runs.updateAtEpoch('r', 4, {})).toBe(true)
      expect(await runs.updateAtEpoch('r', 5, { status: undefined })).toBe(false)
      expect(await runs.updateAtEpoch('r', 4, { status: 'completed', finishedAt: 9, sandboxKey: undefined })).toBe(true)
      expect(await runs.get('r')).toEqual({ runId: 'r', threadId: 't', status: 'completed', startedAt: 1, finishedAt: 9, driverEpoch: 4 })
    })
  },
})
