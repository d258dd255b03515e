// The durable-run kits of @tanstack/ai-sandbox/testkit against the PostgreSQL
// stores on a real server: the RunStore fields kit, the epoch-fence kit, and the takeover kit once
// over one store set and once with the run store, the locks and the log each
// on its own pool over one schema (what separate replicas see). The driver
// finds updateAtEpoch and atEpoch here, so these runs go through the
// engine-enforced fence.
import { runDurableRunFieldsConformance, runEpochFenceConformance, runTakeoverConformance } from '@tanstack/ai-sandbox/testkit'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

describePostgres('postgres durable-run kits', (url) => {
  const schemas = tempSchemas(url)

  runDurableRunFieldsConformance('postgres', async () => (await schemas.open()).runs)

  runEpochFenceConformance('postgres, the run store and the log on separate pools', {
    makeStores: async () => {
      const schema = schemas.schema()
      const [runs, log] = [await schemas.open({ schema }), await schemas.open({ schema })]
      return { runs: runs.runs, log: (runId) => log.stream({ runId }) }
    },
  })

  runTakeoverConformance('postgres, one store set', {
    makeStores: async () => {
      const stores = await schemas.open({ leaseMs: 3000 })
      return { runs: stores.runs, locks: stores.locks, log: (runId) => stores.stream({ runId }) }
    },
  })

  runTakeoverConformance('postgres, a pool per store on one schema', {
    makeStores: async () => {
      const schema = schemas.schema()
      const runs = await schemas.open({ schema })
      const [locks, log] = await Promise.all([schemas.open({ schema, leaseMs: 3000 }), schemas.open({ schema })])
      return { runs: runs.runs, locks: locks.locks, log: (runId) => log.stream({ runId }) }
    },
  })
})
