// The README's example, run: a durable withSandbox on a real local-process
// sandbox with all four SQLite stores wired. Connection "A" starts the run
// (POST route), connection "B" on the same file (what a second process
// opens) serves the join (GET route) from the stored log and finds the
// sandbox record and the run record A wrote. The case is the shared suite's
// (@testing/support/store-suites/with-sandbox).
import { runWithSandboxSuite } from '@testing/support/store-suites/with-sandbox'
import { sqliteTarget } from './helpers/temp-db.js'

runWithSandboxSuite(sqliteTarget)
