/**
 * The public barrel of `@tanstack/ai-sandbox`, grouped by concern. Names follow
 * spec 003. Conformance suites live in the `@tanstack/ai-sandbox/testkit`
 * entry so test-only code (vitest) never loads with the runtime.
 */

// Contracts: SandboxHandle, SandboxProvider, capability flags, base errors
export * from './contracts/index.js'

// Paths and shell quoting shared by providers
export * from './paths/index.js'
export * from './shell/index.js'

// Git over exec, shared by providers
export * from './git/index.js'

// Harness runner: NDJSON from a spawned agent CLI
export * from './harness/index.js'
