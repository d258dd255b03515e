/**
 * `@tanstack/ai-sandbox/internal`: plumbing our own packages share and users
 * should not build on. Unstable: names here may change or go in any release,
 * without a major version. Today: the environment entries that let a
 * provider find a job's or a sandbox's processes, and the lister over them.
 */
export { SANDBOX_ID_ENV, SANDBOX_JOB_ENV, TAGGED_PIDS_SH } from './shell/process-tags.js'
