/**
 * The SQLite stores refuse a run id that breaks the run-id rule of
 * `assertValidRunId` (issue 27) before writing anything: a 10 kB id, a lone
 * surrogate (SQLite would hand back a record whose runId differs from the
 * id used) and CR/LF (a record the log then refuses would stay `running`).
 * A real database file per test.
 */
import { InvalidRunIdError, isValidRunId } from '@tanstack/ai-sandbox'
import { describe, expect, it } from 'vitest'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

const HOSTILE: Record<string, string> = {
  '513 code units': 'r'.repeat(513),
  '10 kB': 'r'.repeat(10_000),
  'a lone surrogate': 'run-\ud800',
  'CR/LF': 'run\r\nx',
}

describe('SQLite stores with a hostile run id', () => {
  it.each(Object.entries(HOSTILE))('%s: the run store and the stream refuse it with invalid-run-id and store nothing', async (_, runId) => {
    expect(isValidRunId(runId)).toBe(false)
    const { runs, stream } = dbs.open()
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
