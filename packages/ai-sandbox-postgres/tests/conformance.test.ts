// The shared SandboxInstanceStore contract, run against the PostgreSQL store
// on a real server (a fresh schema per test, dropped after the file).
import { runSandboxInstanceStoreConformance } from '@tanstack/ai-sandbox/testkit'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

describePostgres('postgres instance store', (url) => {
  const schemas = tempSchemas(url)
  runSandboxInstanceStoreConformance('postgres', async () => (await schemas.open()).instances)
})
