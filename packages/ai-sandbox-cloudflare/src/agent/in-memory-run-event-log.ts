/**
 * `InMemoryRunEventLog`: the run event log in the memory of one isolate or
 * process, for tests, a single-process host, or a coordinator that keeps
 * nothing across restarts. Same rules as the Durable Object log (both are
 * `BackedRunEventLog`); stored values are JSON copies, so a caller can never
 * reach a stored record or chunk through what it passed or got back.
 */
import type { RunStatus } from '@tanstack/ai'
import { BackedRunEventLog, type RunLogBackend, type StoredEvent, type StoredLog, type StoredRecord } from './backed-run-event-log.js'

/**
 * A run event log held in memory (see `RunEventLog` for its rules): gap-free
 * 0-based `seq`, exclusive-cursor reads that wait for more, readers woken by
 * every append, update and close, appends refused once a run's log is closed
 * or its status terminal, and the epoch fence of a claimed run.
 *
 * @example
 * ```ts
 * const log = new InMemoryRunEventLog()
 * await log.open({ runId: 'run-1', threadId: 'thread-1' })
 * await log.append('run-1', [{ type: 'RUN_STARTED', runId: 'run-1', threadId: 'thread-1', timestamp: Date.now() }])
 * for await (const event of log.read('run-1', { after: -1 })) console.log(event.seq, event.chunk.type)
 * ```
 */
export class InMemoryRunEventLog extends BackedRunEventLog {
  constructor() {
    super(memoryBackend())
  }
}

function memoryBackend(): RunLogBackend {
  const records = new Map<string, string>()
  const logs = new Map<string, StoredLog>()
  const events = new Map<string, StoredEvent[]>()
  return {
    transaction: (fn) => fn(),
    readRecord: (runId) => {
      const text = records.get(runId)
      return text === undefined ? undefined : JSON.parse(text)
    },
    writeRecord: (record: StoredRecord) => void records.set(record.runId, JSON.stringify(record)),
    listRecords: (_filter: { threadId?: string; status?: RunStatus }) => [...records.values()].map((text) => JSON.parse(text) as unknown),
    readLog: (runId) => {
      const log = logs.get(runId)
      return log && { ...log }
    },
    writeLog: (runId, log) => void logs.set(runId, { ...log }),
    insertEvents: (runId, batch) => {
      const list = events.get(runId) ?? []
      list.push(...batch.map((event) => ({ ...event })))
      events.set(runId, list)
    },
    eventsAfter: (runId, after, limit) => {
      const list = events.get(runId) ?? []
      // seq is the index: gap-free from 0.
      const from = Math.max(0, after + 1)
      return list.slice(from, from + limit).map((event) => ({ ...event }))
    },
  }
}
