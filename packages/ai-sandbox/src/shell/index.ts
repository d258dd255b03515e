// Shell: the POSIX sh that core talks to inside sandboxes: quoting, run files
// written through exec, and the environment tags that find a run's processes.
// The command-line reader (`command-line.ts`, `simple-command.ts`) is internal:
// it serves the policy judge (`evaluateCommand`) and is no general shell parser.
export { shellQuote, shellJoin } from './quote.js'
export { writeSandboxRunFile, sandboxRunFilePath, removeSandboxRunFiles } from './sandbox-run-file.js'
export type { WriteSandboxRunFileOptions } from './sandbox-run-file.js'
