/**
 * `@tanstack/ai-sandbox/internal`: plumbing our own packages share and users
 * should not build on. Unstable: names here may change or go in any release,
 * without a major version. Today: the environment entries that let a
 * provider find a job's or a sandbox's processes, the lister over them, the
 * job-tree killer and the confined fs script the container providers run.
 */
export { SANDBOX_ID_ENV, SANDBOX_JOB_ENV, TAGGED_PIDS_SH } from './shell/process-tags.js'
export { GROUP_KILLER, JOB_SCAN_AWK } from './shell/group-killer.js'
export { FS_EXIT, FS_SCRIPT } from './shell/fs-script.js'
export type { FsOp } from './shell/fs-script.js'
export { FS_ENTRY_TYPES, fsScriptError, fsScriptPath, fsTooLargeError, parseFsStat, refuseWorkspaceRoot } from './shell/fs-script-results.js'
export type { FsScriptOwner, FsScriptPath } from './shell/fs-script-results.js'
