// Runs the whole provider kit on the in-memory fake, once fs-only and once
// with snapshots and fork: proves the kit's own wiring (shared sandboxes,
// capability gating, the UnsupportedCapabilityError checks for every false
// flag, named skips, snapshot and fork checks) passes a correct provider.
import { runSandboxProviderConformance } from '../../src/testkit/index.js'
import { memoryProvider } from './memory-provider.js'

runSandboxProviderConformance('in-memory fake (fs only)', { makeProvider: () => memoryProvider(), timeoutMs: 10_000 })
runSandboxProviderConformance('in-memory fake (fs, snapshots, fork)', { makeProvider: () => memoryProvider({}, { snapshots: true, fork: true }), timeoutMs: 10_000 })
