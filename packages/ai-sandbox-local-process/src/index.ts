/**
 * Public entry of `@tanstack/ai-sandbox-local-process`: the factory, its config
 * type and the capability flags. Internals (confinement, process groups, the
 * on-disk layout) are deliberately not exported.
 */
export { localProcessSandbox, DEFAULT_KILL_GRACE_MS } from './provider.js'
export type { LocalProcessSandboxConfig } from './provider.js'
export { LOCAL_PROCESS_CAPABILITIES } from './capabilities.js'
export { DEFAULT_WATCH_IGNORE } from './watch.js'
export { DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_MAX_READ_BYTES } from './sandbox-state.js'
export { OUTPUT_HIGH_WATER_MARK } from './text-stream.js'
