// Shell: the POSIX sh that core talks to inside sandboxes: quoting, run files
// written through exec, and the environment tags that find a run's processes.
// The command-line reader (`command-line.ts`, `simple-command.ts`) is internal:
// it serves the policy judge (`evaluateCommand`) and is no general shell parser.
export { shellQuote, shellJoin } from './quote.js'
export { writeSandboxRunFile, sandboxRunFilePath, removeSandboxRunFiles } from './sandbox-run-file.js'
export type { WriteSandboxRunFileOptions } from './sandbox-run-file.js'
export { stopTaggedProcesses, HARNESS_RUN_TAG_ENV, SANDBOX_JOB_ENV, SANDBOX_ID_ENV, TAGGED_PIDS_SH } from './process-tags.js'
