// Harness: what every harness adapter shares to run an agent CLI and read its NDJSON stdout.
export { toLines, LineTooLongError } from './to-lines.js'
export type { ToLinesOptions } from './to-lines.js'
export { spawnNdjson } from './spawn-ndjson.js'
export type { SpawnNdjsonOptions, SpawnNdjsonExit } from './spawn-ndjson.js'
export { createRunScopedIdGen } from './run-scoped-id.js'
export { buildHarnessPrompt, messageText, MAX_PREAMBLE_CHARS } from './build-prompt.js'
