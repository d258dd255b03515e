// Contracts: the shapes providers implement and everything else consumes: the
// sandbox handle and its fs, process and git parts, the provider, capability
// flags, the base errors, run ids, secret references and option validation.
// Not exported: `pause`, the abortable wait core's own poll loops share.
export * from './errors.js'
export * from './capabilities.js'
export type * from './fs.js'
export type * from './process.js'
export type * from './git.js'
export * from './handle.js'
export type * from './provider.js'
export * from './require-capability.js'
export * from './run-id.js'
export { createSecrets, isSecretRef, bearer, resolveSecret, sameSecret } from './secret-ref.js'
export type { SecretRef, Secrets, SecretFormat } from './secret-ref.js'
export { parseOptions, type ParseOptionsAdvice } from './validate.js'
export { isSandboxToolCall, SANDBOX_TOOL_CALL_KEY } from './tool-call-marker.js'
