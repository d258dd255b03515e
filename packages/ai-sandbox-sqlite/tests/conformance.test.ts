// The shared SandboxInstanceStore contract, run against the SQLite store on a
// real database file (one per test, removed after the file).
import { runSandboxInstanceStoreConformance } from '@tanstack/ai-sandbox/testkit'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

runSandboxInstanceStoreConformance('sqlite', () => dbs.open().instances)
