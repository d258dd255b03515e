/**
 * Public entry of `@tanstack/ai-sandbox-daytona`: the factory, its config
 * type and defaults, the capability flags, the label names and the preview
 * URL lifetime. Internals (the job script, the toolbox, the session pool)
 * are deliberately not exported.
 */
export { daytonaSandbox } from './provider.js'
export { DEFAULT_API_URL, DEFAULT_KILL_GRACE_MS, DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_MAX_READ_BYTES, DEFAULT_TIMEOUT_MS, DEFAULT_WORKDIR } from './config.js'
export type { DaytonaSandboxConfig } from './config.js'
export { DAYTONA_CAPABILITIES } from './capabilities.js'
export { LABEL as DAYTONA_SANDBOX_LABELS } from './labels.js'
export { PREVIEW_URL_TTL_SECONDS } from './ports.js'
