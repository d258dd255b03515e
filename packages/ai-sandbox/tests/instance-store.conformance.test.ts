// Runs the instance-store conformance kit on the in-memory default store, the
// same suite every durable store must pass.
import { runSandboxInstanceStoreConformance } from '../src/testkit/index.js'
import { InMemorySandboxInstanceStore } from '../src/definition/instance-store.js'

runSandboxInstanceStoreConformance('in-memory', () => new InMemorySandboxInstanceStore())
