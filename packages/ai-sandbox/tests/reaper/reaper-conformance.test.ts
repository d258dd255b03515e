// The reaper kit on core's in-memory fake, which has no exec: every case that
// needs one is reported skipped naming the capability. The kit's full run over
// real shells is the local-process provider's suite (real `sh` children on the
// host, like core's naive host provider, so running it here as well proved
// nothing more); the Docker, Daytona and PostgreSQL suites run it again over
// their own sandboxes and stores.
import { runReaperConformance } from '../../src/testkit/index.js'
import { memoryProvider } from '../testkit/memory-provider.js'

runReaperConformance('in-memory fake (no exec)', { makeProvider: () => memoryProvider() })
