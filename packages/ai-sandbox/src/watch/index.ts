// Watch: workspace file events: `watchWorkspace`, its errors, and the names of
// the per-run file events. Not exported: the poll listing, the native
// `fs.watch` side, the run baseline and the start snapshot, which stay
// internal to `withSandbox` (only the baseline's diff size limit is public).
export { watchWorkspace, DEFAULT_WATCH_IGNORE, DEFAULT_WATCH_INTERVAL_MS } from './watch-workspace.js'
export type { WatchWorkspaceOptions, WorkspaceWatcher, WatchLogger } from './watch-workspace.js'
export { WorkspaceWatchError } from './errors.js'
export type { WorkspaceWatchErrorReason } from './errors.js'
export { FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT } from './run-file-events.js'
export type { FileChange } from './run-file-events.js'
export { DEFAULT_MAX_DIFF_FILE_BYTES } from './file-baseline.js'
