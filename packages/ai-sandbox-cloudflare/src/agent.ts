/**
 * The `/agent` entry of `@tanstack/ai-sandbox-cloudflare`: the run event log
 * an edge coordinator keeps (in memory or in a Durable Object's SQLite
 * storage), core's run-driver seams bound to it, and the Web-Crypto bearer
 * check. This package's own event-log statuses and record are exported with a
 * `Legacy` prefix, so an app imports them beside core's `RunStatus`,
 * `RunRecord`, … from `@tanstack/ai` without a clash (spec 000 "Edge /
 * serverless execution").
 */
export { InMemoryRunEventLog } from './agent/in-memory-run-event-log.js'
export { DurableObjectRunEventLog } from './agent/durable-object-run-event-log.js'
export { durableObjectInstanceStore } from './agent/durable-object-instance-store.js'
export type { DurableObjectRunEventLogOptions, DurableObjectSqlStorage, SqlStorageLike } from './agent/durable-object-run-event-log.js'
export { MAX_EVENT_CHARS } from './agent/backed-run-event-log.js'
export { runLogStore, runLogStream } from './agent/run-log-bindings.js'
export type { RunLogStore, RunLogStreamOptions } from './agent/run-log-bindings.js'
export { migrateStoredRunRecord, RunEventLogError } from './agent/vocabulary.js'
export type {
  RunEvent,
  RunEventLog,
  RunEventLogErrorReason,
  RunEventLogReadOptions,
  RunLogPatch,
  RunLogRecord,
  RunStatus as LegacyRunStatus,
  TerminalRunStatus as LegacyTerminalRunStatus,
  RunRecord as LegacyRunRecord,
  RunError as LegacyRunError,
} from './agent/vocabulary.js'
export { timingSafeBearerEqualWeb } from './agent/bearer.js'
export { createCloudflareSandboxAgent } from './agent/create-agent.js'
export type { AgentRunInfo, CloudflareSandboxAgent, CloudflareSandboxAgentConfig, ColocatedAgentConfig, DoDrivesAgentConfig } from './agent/create-agent.js'
export type { ColocatedRunnerCommand } from './agent/colocated.js'
export { SSE_HEARTBEAT_MS } from './agent/sse.js'
