/**
 * `@tanstack/ai-sandbox/internal`: plumbing our own packages share and users
 * should not build on. Unstable: names here may change or go in any release,
 * without a major version. Today: the environment tags that let a provider
 * and the harness find a job's or a run's processes, the harness's run-id
 * fallback, the journal folder rule and the setup-plan runner.
 */
export { HARNESS_RUN_TAG_ENV, SANDBOX_ID_ENV, SANDBOX_JOB_ENV, stopTaggedProcesses, TAGGED_PIDS_SH } from './shell/process-tags.js'
export { harnessRunIds } from './harness/guard-harness-run.js'
export { journalDirOf } from './journal/commands.js'
export { recordSetupPlan } from './workspace/setup-plan.js'
export { runSetupPlan, SETUP_OUTPUT_TAIL_LINES } from './workspace/setup-shell.js'
