// The durable-run kits of @tanstack/ai-sandbox/testkit against the SQLite
// stores on real database files: the RunStore fields kit, the epoch-fence kit
// (SQLite itself refuses a superseded writer), and the takeover
// kit once over one connection and once with the run store, the locks and the
// log each on its own connection to one file (what separate processes see).
import { runDurableRunFieldsConformance, runEpochFenceConformance, runTakeoverConformance } from '@tanstack/ai-sandbox/testkit'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

runDurableRunFieldsConformance('sqlite', () => dbs.open().runs)

runEpochFenceConformance('sqlite, the run store and the log on separate connections', {
  makeStores: () => {
    const path = dbs.path()
    const [runs, log] = [dbs.open({ path }), dbs.open({ path })]
    return { runs: runs.runs, log: (runId) => log.stream({ runId }) }
  },
})

runTakeoverConformance('sqlite, one connection', {
  makeStores: () => {
    const stores = dbs.open({ leaseMs: 3000 })
    return { runs: stores.runs, locks: stores.locks, log: (runId) => stores.stream({ runId }) }
  },
})

runTakeoverConformance('sqlite, a connection per store on one file', {
  makeStores: () => {
    const path = dbs.path()
    const [runs, locks, log] = [dbs.open({ path }), dbs.open({ path, leaseMs: 3000 }), dbs.open({ path })]
    return { runs: runs.runs, locks: locks.locks, log: (runId) => log.stream({ runId }) }
  },
})
