// The SQLite RunStore: every method core declares, the key-presence patch
// rule, and the same answers as core's InMemoryRunStore for one sequence of
// calls, over a real database file shared by two connections. The cases are
// the shared suite's (@testing/support/store-suites/run-store); this file
// says how to corrupt a row.
import { runRunStoreSuite } from '@testing/support/store-suites/run-store'
import { sqliteTarget } from './helpers/temp-db.js'

runRunStoreSuite(sqliteTarget, {
  corruptStatus: (stores, runId, status) => void stores.db.prepare('UPDATE runs SET status = ? WHERE run_id = ?').run(status, runId),
})
