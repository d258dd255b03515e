// The README's example, run: a durable withSandbox on a real local-process
// sandbox with all four PostgreSQL stores wired. Store set "A" starts the run
// (POST route), store set "B" on its own pool over the same schema (what a
// second replica opens) serves the join (GET route) from the stored log and
// finds the sandbox record and the run record A wrote. The case is the shared
// suite's (@testing/support/store-suites/with-sandbox).
import { runWithSandboxSuite } from '@testing/support/store-suites/with-sandbox'
import { postgresTarget } from './helpers/postgres.js'

runWithSandboxSuite(postgresTarget)
