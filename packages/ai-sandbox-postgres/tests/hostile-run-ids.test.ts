/**
 * The PostgreSQL stores refuse a run id that breaks the run-id rule of
 * `assertValidRunId` (issue 27) before writing anything: a 10 kB id, a lone
 * surrogate (two distinct ids with lone surrogates were stored in one
 * row) and CR/LF (a record the log then refuses would stay `running`).
 * A real server, a temporary schema. The cases are the shared suite's
 * (@testing/support/store-suites/hostile-run-ids).
 */
import { runHostileRunIdSuite } from '@testing/support/store-suites/hostile-run-ids'
import { postgresTarget } from './helpers/postgres.js'

runHostileRunIdSuite(postgresTarget)
