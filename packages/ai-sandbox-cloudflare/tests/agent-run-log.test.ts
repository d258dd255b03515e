/**
 * The run event log of the `/agent` entry, in memory (the Durable Object log
 * shares every rule through `BackedRunEventLog`; durable-object-run-log.test.ts
 * runs the same kits against it in workerd): sequencing, the exclusive
 * cursor, readers woken and ended, the signal, refusals after the end, the
 * epoch fence, the legacy layout, and core's RunStore and StreamDurability
 * kits over its two bindings.
 */
import { runDurableRunFieldsConformance, runStreamDurabilityConformance } from '@tanstack/ai-sandbox/testkit'
import { describe, expect, it } from 'vitest'
// The entry also re-exports the SDK's Sandbox class, which only workerd can load: Node imports the modules.
import { InMemoryRunEventLog } from '../src/agent/in-memory-run-event-log.js'
import { runLogStore, runLogStream } from '../src/agent/run-log-bindings.js'
import { migrateStoredRunRecord, RunEventLogError } from '../src/agent/vocabulary.js'
import { describeRunEventLog } from './helpers/run-log-cases.js'

describeRunEventLog('InMemoryRunEventLog', () => new InMemoryRunEventLog())

describe('migrateStoredRunRecord', () => {
  it("maps the legacy layout onto core's statuses and fields", () => {
    expect(migrateStoredRunRecord({ runId: 'r1', status: 'done', createdAt: 10, updatedAt: 20, lastSeq: 4 })).toEqual({
      record: { runId: 'r1', threadId: 'r1', status: 'completed', startedAt: 10, finishedAt: 20, lastSeq: 4, updatedAt: 20 },
      migrated: true,
    })
    expect(migrateStoredRunRecord({ runId: 'r2', threadId: 't', status: 'error', createdAt: 1, updatedAt: 2, lastSeq: -1, error: { message: 'x', code: 'E' } }).record).toMatchObject({ status: 'failed', threadId: 't', error: { message: 'x', code: 'E' } })
    expect(migrateStoredRunRecord({ runId: 'r3', status: 'cancelled', createdAt: 1, updatedAt: 2, lastSeq: 0 }).record.status).toBe('aborted')
    expect(migrateStoredRunRecord({ runId: 'r4', status: 'running', createdAt: 1, updatedAt: 2, lastSeq: 0 }).record).not.toHaveProperty('finishedAt')
  })

  it('passes the current layout through and refuses anything else, typed', () => {
    const current = { runId: 'r', threadId: 't', status: 'running', startedAt: 1, lastSeq: 0, updatedAt: 1 }
    expect(migrateStoredRunRecord(current)).toEqual({ record: current, migrated: false })
    const error = (() => {
      try {
        migrateStoredRunRecord({ runId: 'r', status: 'weird', createdAt: 1 })
      } catch (caught) {
        return caught
      }
    })()
    expect(RunEventLogError.isInstance(error) && error.reason).toBe('corrupt-record')
  })
})

runDurableRunFieldsConformance('runLogStore(InMemoryRunEventLog)', () => runLogStore(new InMemoryRunEventLog()))

runStreamDurabilityConformance('runLogStream(InMemoryRunEventLog)', {
  makeStores: () => {
    const log = new InMemoryRunEventLog()
    return { stream: (source) => runLogStream(log, source) }
  },
})
