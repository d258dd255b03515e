// @example/custom-provider: the directory provider built in docs/writing-a-provider.md.
export { directorySandbox, DIRECTORY_CAPABILITIES, DEFAULT_KILL_GRACE_MS, DEFAULT_MAX_BYTES, PROVIDER_NAME } from './provider.js'
export type { DirectorySandboxConfig } from './provider.js'
export { JOB_VARIABLE, DRAIN_MS, OUTPUT_HIGH_WATER_MARK } from './process.js'
