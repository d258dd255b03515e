// Watch: workspace file events, the run baseline and per-run dispatch.
export { watchWorkspace, DEFAULT_WATCH_IGNORE, DEFAULT_WATCH_INTERVAL_MS } from './watch-workspace.js'
export type { WatchWorkspaceOptions, WorkspaceWatcher, WatchLogger } from './watch-workspace.js'
export { WorkspaceWatchError } from './errors.js'
export type { WorkspaceWatchErrorReason } from './errors.js'
export { FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT } from './run-file-events.js'
export type { FileChange } from './run-file-events.js'
export { DEFAULT_MAX_DIFF_FILE_BYTES } from './file-baseline.js'
