/**
 * `@tanstack/ai-sandbox/internal`: plumbing our own packages share and users
 * should not build on. Unstable: names here may change or go in any release,
 * without a major version. Today: the environment entries that let a
 * provider find a job's or a sandbox's processes, the lister over them, the
 * job-tree killer, the confined fs script the container providers run and
 * the `fs` built over it, the env rule and env-file text, the checks,
 * stops and `wait`/`kill` of process calls, and the per-run model proxy
 * (until the adapters use it, issue 36).
 */
export { SANDBOX_ID_ENV, SANDBOX_JOB_ENV, TAGGED_PIDS_SH } from './shell/process-tags.js'
export { GROUP_KILLER, JOB_SCAN_AWK } from './shell/group-killer.js'
export { FS_EXIT, FS_SCRIPT } from './shell/fs-script.js'
export type { FsOp } from './shell/fs-script.js'
export { FS_ENTRY_TYPES, fsScriptError, fsScriptPath, fsTooLargeError, parseFsStat, refuseWorkspaceRoot } from './shell/fs-script-results.js'
export type { FsScriptOwner, FsScriptPath } from './shell/fs-script-results.js'
export { scriptFs, checkWriteData } from './shell/script-fs.js'
export type { ScriptFsRunner } from './shell/script-fs.js'
export { envVarsSchema, envFileText, callEnvFileText } from './shell/env-vars.js'
export { checkExecOptions, checkProcessCall, execStoppedError, spawnControls, watchExecStop } from './contracts/process-calls.js'
export type { ExecStopper, ExecStopReason } from './contracts/process-calls.js'
export { assertArtifactName, assertBlobMatches, blobMissingForAppend, checkpointBlobs, parseBlobAgeOptions } from './snapshots/stores.js'
export { checkpointFromRow, checkpointToRow } from './snapshots/checkpoint-row.js'
export type { CheckpointRow } from './snapshots/checkpoint-row.js'
export { createModelProxy, ModelProxyError } from './credentials/index.js'
export type { BudgetExceeded, ModelBudget, ModelPrice, ModelProxy, ModelProxyErrorReason, ModelProxyOptions, ModelUpstream, ModelUsage, ModelUsageTotals, ModelWire, TokenCounts } from './credentials/index.js'
