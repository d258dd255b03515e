/**
 * The SQLite stores refuse a run id that breaks the run-id rule of
 * `assertValidRunId` (issue 27) before writing anything: a 10 kB id, a lone
 * surrogate (SQLite would hand back a record whose runId differs from the
 * id used) and CR/LF (a record the log then refuses would stay `running`).
 * A real database file per test. The cases are the shared suite's
 * (@testing/support/store-suites/hostile-run-ids).
 */
import { runHostileRunIdSuite } from '@testing/support/store-suites/hostile-run-ids'
import { sqliteTarget } from './helpers/temp-db.js'

runHostileRunIdSuite(sqliteTarget)
