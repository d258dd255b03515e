/**
 * Type test: the `/agent` entry's event-log vocabulary imports beside core's
 * run-lifecycle types of the same plain names with no clash (spec 000: the
 * package's own `RunStatus`, `TerminalRunStatus`, `RunRecord` and `RunError`
 * are re-exported as `Legacy…`; `RunEventLog`, `RunEvent` and
 * `RunEventLogReadOptions` keep their names), and the two vocabularies stay distinct.
 */
import type { RunError, RunRecord, RunStatus, TerminalRunStatus } from '@tanstack/ai'
import { expectTypeOf, test } from 'vitest'
import type { LegacyRunError, LegacyRunRecord, LegacyRunStatus, LegacyTerminalRunStatus, RunEvent, RunEventLog, RunEventLogReadOptions, RunLogRecord } from '../src/agent.js'

test("the legacy statuses are this package's own, not core's", () => {
  expectTypeOf<LegacyTerminalRunStatus>().toEqualTypeOf<'done' | 'error' | 'cancelled'>()
  expectTypeOf<LegacyRunStatus>().toEqualTypeOf<'running' | 'done' | 'error' | 'cancelled'>()
  expectTypeOf<TerminalRunStatus>().toEqualTypeOf<'completed' | 'failed' | 'aborted'>()
  expectTypeOf<LegacyRunStatus>().not.toEqualTypeOf<RunStatus>()
})

test("the legacy record keeps its own layout; the log's record is core's plus its cursor", () => {
  expectTypeOf<LegacyRunRecord>().toHaveProperty('createdAt').toEqualTypeOf<number>()
  expectTypeOf<LegacyRunRecord>().not.toEqualTypeOf<RunRecord>()
  expectTypeOf<RunLogRecord>().toMatchTypeOf<RunRecord>()
  expectTypeOf<RunLogRecord['lastSeq']>().toEqualTypeOf<number>()
  expectTypeOf<LegacyRunError>().toEqualTypeOf<RunError>()
})

test('the event-log names are plain', () => {
  expectTypeOf<RunEvent['seq']>().toEqualTypeOf<number>()
  expectTypeOf<RunEventLogReadOptions>().toEqualTypeOf<{ after?: number; signal?: AbortSignal }>()
  expectTypeOf<RunEventLog['read']>().returns.toEqualTypeOf<AsyncIterable<RunEvent>>()
})
