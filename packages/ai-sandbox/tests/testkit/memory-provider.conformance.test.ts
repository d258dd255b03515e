// Runs the whole provider kit on the fs-only in-memory fake: proves the kit's
// own wiring (shared sandboxes, capability gating, the UnsupportedCapabilityError
// checks for every false flag, named skips) passes a correct provider.
import { runSandboxProviderConformance } from '../../src/testkit/index.js'
import { memoryProvider } from './memory-provider.js'

runSandboxProviderConformance('in-memory fake (fs only)', { makeProvider: () => memoryProvider(), timeoutMs: 10_000 })
