/**
 * The public barrel of `@tanstack/ai-sandbox`, grouped by concern. Names follow
 * spec 003. Conformance suites live in the `@tanstack/ai-sandbox/testkit`
 * entry so test-only code (vitest) never loads with the runtime. Locks
 * (`withLocks`, `InMemoryLockStore`) are deliberately not re-exported: import
 * them from `@tanstack/ai/locks`. The poll listing, the run baseline and the
 * per-run file-event dispatch stay internal to `withSandbox`.
 */

// Contracts: SandboxHandle, SandboxProvider, capability flags, base errors
export * from './contracts/index.js'

// Capability tokens: where withSandbox, harness adapters and platform middleware meet
export * from './capabilities/index.js'

// Middleware: withSandbox
export * from './middleware/index.js'

// Definition: defineSandbox, compound key, instance store
export * from './definition/index.js'

// Workspace: defineWorkspace, sources, secrets, bootstrap, policy, projection
export * from './workspace/index.js'

// MCP tool-proxy bridge (shared by harness adapters): the transport-agnostic
// core + the node:http host transport + a fetch-friendly JSON-RPC dispatcher,
// the provisioner contract and its default, live CUSTOM events, and the
// co-located seam (toolDescriptors / remoteToolStubs / httpRemoteToolExecutor
// in the sandbox, executeHostTool on the host).
export * from './bridge/index.js'

// Watch: watchWorkspace, file-event names, watch errors
export * from './watch/index.js'

// Harness runner: NDJSON from a spawned agent CLI, the prompt, and the run
// plumbing every adapter shares (the guard, RUN_ERROR chunks, the secret
// redactor, run files in the sandbox's /tmp)
export * from './harness/index.js'

// The run journal: an agent's output inside the sandbox, so it outlives the
// host that started it (spec 000 "Durable runs (the run journal)")
export * from './journal/index.js'

// Durability: replay alignment against the stored event log, chunk identity,
// and the capability harness adapters read a durable run from
export * from './durability/index.js'

// The reaper: close out detached runs nobody comes back for (probeRunExit, reapDetachedRuns),
// reclaim their sandboxes (reclaimSandbox, sandboxReclaimer) and prune journals (pruneJournals)
export * from './reaper/index.js'

// Portable snapshots: capture a workspace as a manifest plus content-addressed
// blobs, restore it into a new sandbox on any provider (the engine; the
// checkpoint store and the withSandbox integration build on it)
export * from './snapshots/index.js'

// Provider building blocks: path confinement, shell quoting, git over exec
export * from './paths/index.js'
export * from './shell/index.js'
export * from './git/index.js'
