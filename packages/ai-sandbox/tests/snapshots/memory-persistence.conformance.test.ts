// The checkpoint-store kit against the in-memory persistence set (createInMemorySandboxPersistence),
// one set shared by every check as an application would share one.
import { createInMemorySandboxPersistence } from '../../src/index.js'
import { runSandboxCheckpointStoreConformance } from '../../src/testkit/index.js'

const persistence = createInMemorySandboxPersistence()
runSandboxCheckpointStoreConformance('in-memory', { makePersistence: () => persistence })
