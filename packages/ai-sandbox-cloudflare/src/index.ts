/**
 * Public entry of `@tanstack/ai-sandbox-cloudflare`: the factory, its config
 * type and defaults, the capability flags, and the SDK's `Sandbox` Durable
 * Object class, which an app's Worker re-exports under the `class_name` its
 * wrangler config names. Internals (the wrapper scripts, the session pool,
 * the log follower) are deliberately not exported.
 */
export { cloudflareSandbox } from './provider.js'
export { DEFAULT_KILL_GRACE_MS, DEFAULT_MAX_EXEC_OUTPUT_BYTES, DEFAULT_MAX_READ_BYTES, DEFAULT_TIMEOUT_MS, DEFAULT_WORKDIR, TRANSFER_CHUNK_BYTES } from './config.js'
export type { CloudflareSandboxConfig, SandboxNamespaceBinding } from './config.js'
export { CLOUDFLARE_CAPABILITIES } from './capabilities.js'
export { CONTROL_PORT } from './ports.js'
export { Sandbox } from './sandbox-class.js'
