/**
 * A package's stores refuse a run id that breaks the run-id rule of
 * `assertValidRunId` (issue 27) before writing anything: a 10 kB id, a lone
 * surrogate (SQLite would hand back a record whose runId differs from the id
 * used; PostgreSQL stored two distinct such ids in one row) and CR/LF (a
 * record the log then refuses would stay `running`). Fresh stores per case.
 */
import { InvalidRunIdError, isValidRunId } from '@tanstack/ai-sandbox'
import { expect, it } from 'vitest'
import type { StorePlaces, StoreTarget, SuiteStores } from './target.js'

const HOSTILE: Record<string, string> = {
  '513 code units': 'r'.repeat(513),
  '10 kB': 'r'.repeat(10_000),
  'a lone surrogate': 'run-\ud800',
  'CR/LF': 'run\r\nx',
}

/** Register one case per hostile run id (see the module header) as the describe block '<label> stores with a hostile run id'. */
export function runHostileRunIdSuite<S extends SuiteStores, P extends StorePlaces<S>>(target: StoreTarget<S, P>): void {
  target.describe(`${target.label} stores with a hostile run id`, (places) => {
    it.each(Object.entries(HOSTILE))('%s: the run store and the stream refuse it with invalid-run-id and store nothing', async (_, runId) => {
      expect(isValidRunId(runId)).toBe(false)
      const { runs, stream } = await places.open()
      const refused = async (call: () => Promise<unknown>) => {
        const error = await call().then(() => undefined, (thrown: unknown) => thrown)
        expect(InvalidRunIdError.isInstance(error), `InvalidRunIdError; got ${String(error)}`).toBe(true)
      }
      await refused(() => runs.createOrResume({ runId, threadId: 't-hostile', startedAt: 1 }))
      await refused(() => runs.update(runId, { status: 'failed' }))
      await refused(() => runs.updateAtEpoch(runId, undefined, {}))
      await refused(() => runs.get(runId))
      expect(await runs.listByThread('t-hostile'), 'no record was created').toEqual([])
      expect(await runs.findActiveRun('t-hostile'), 'so the thread can start a new run').toBeNull()
      expect(() => stream({ runId })).toThrow(expect.objectContaining({ reason: 'invalid-run-id' }))
    })
  })
}
