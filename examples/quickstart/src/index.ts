/**
 * What other workspace packages may import from the quickstart (the bench
 * times `runDemo` and records a transcript with the offline model). Not
 * published; `main.ts` is the program itself and is deliberately not exported.
 */
export { runDemo } from './demo.js'
export type { DemoOptions, DemoResult, DemoTimings } from './demo.js'
export type { DemoReporter, DemoIntro } from './reporter.js'
export type { WorkspaceChanges, ChangedFile } from './changes.js'
export { DemoError } from './errors.js'
export type { DemoErrorReason } from './errors.js'
export { startOfflineModel, scriptFor, OFFLINE_TASK, OFFLINE_STREAMING, DEMO_FIXTURE_PATH } from './offline-model.js'
export type { OfflineModel } from './offline-model.js'
export { SAMPLE_FILES } from './repo.js'
export { resolveClaudeExecutable } from './claude-cli.js'
