/**
 * The PostgreSQL stores of `@tanstack/ai-sandbox-postgres` beside the SQLite
 * and in-memory ones (issue 17): lock acquire+release latency, append
 * throughput in chunks/s (one chunk per append and core's default batch of
 * 32; plain, and through the epoch fence `atEpoch` as a driver appends), and
 * tail latency from calling `append` to a tailing `read` yielding the chunk,
 * on the same store set and on a second one (its own pool and LISTEN
 * connection: what another process sees). The server is
 * `TANSTACK_SANDBOX_PG_URL` or one started for the bench; a fresh schema is
 * dropped at the end. Invariant: every measured log holds exactly the chunks
 * appended, and every tailer receives every chunk in order.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomUUID } from 'node:crypto'
import { memoryStream, type RunStore } from '@tanstack/ai'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { createPostgresStores } from '@tanstack/ai-sandbox-postgres'
import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'
import { suitePostgres } from '@testing/claude-code-e2e/postgres-server'
import { appendThroughput, lockLatency, tailLatency, type AppendThroughputRow, type SqliteStoresBench, type TailLatencyRow } from './sqlite-stores.js'
import { BenchError, round } from './stats.js'
import { benchTakeoverLatency, IN_MEMORY_STORES, type TakeoverLatencyRow } from './takeover-latency.js'

/** What {@link benchPostgresStores} returns: the same three tables as the SQLite bench. */
export type PostgresStoresBench = SqliteStoresBench

/** A run record at `driverEpoch` 1, so `atEpoch(1)` appends pass the fence (the driver's path). */
async function claimedRun(runs: RunStore): Promise<string> {
  const runId = `bench-${randomUUID()}`
  await runs.createOrResume({ runId, threadId: 'bench-thread', startedAt: Date.now() })
  await runs.update(runId, { driverEpoch: 1 })
  return runId
}

/**
 * Measure the PostgreSQL stores beside SQLite (a WAL file in a temp folder)
 * and the in-memory ones.
 * @param options.lockIterations - Timed `withLock` calls per store.
 * @param options.appendChunks - Chunks appended per throughput row.
 * @param options.tailSamples - Chunks timed per tail row.
 * @throws BenchError when no PostgreSQL can be reached.
 */
export async function benchPostgresStores(options: { lockIterations: number; appendChunks: number; tailSamples: number }): Promise<PostgresStoresBench> {
  const pg = await suitePostgres('bench_stores')
  if ('missing' in pg) throw new BenchError(`the PostgreSQL store bench needs PostgreSQL: ${pg.missing}`)
  const other = await createPostgresStores({ connectionString: pg.url, schema: pg.schema, migrate: false })
  const dir = await mkdtemp(join(tmpdir(), 'bench-pg-sqlite-'))
  const sqlite = createSqliteStores({ path: join(dir, 'bench.db') })
  const sqliteOther = createSqliteStores({ path: join(dir, 'bench.db'), pollMs: 25 })
  const postgres = 'postgres (127.0.0.1)'
  try {
    const locks = [
      await lockLatency('InMemoryLockStore', new InMemoryLockStore(), options.lockIterations),
      await lockLatency('sqlite (WAL file)', sqlite.locks, options.lockIterations),
      await lockLatency(postgres, pg.stores.locks, options.lockIterations),
    ]

    const appends: AppendThroughputRow[] = []
    for (const batch of [1, 32]) {
      appends.push(await appendThroughput('memoryStream', memoryStream({ runId: `bench-${randomUUID()}` }), batch, options.appendChunks))
      appends.push(await appendThroughput('sqlite (WAL file)', sqlite.stream({ runId: `bench-${randomUUID()}` }), batch, options.appendChunks))
      appends.push(await appendThroughput('sqlite, atEpoch (fenced)', sqlite.stream({ runId: await claimedRun(sqlite.runs) }).atEpoch(1), batch, options.appendChunks))
      appends.push(await appendThroughput(postgres, pg.stores.stream({ runId: `bench-${randomUUID()}` }), batch, options.appendChunks))
      appends.push(await appendThroughput(`${postgres}, atEpoch (fenced)`, pg.stores.stream({ runId: await claimedRun(pg.stores.runs) }).atEpoch(1), batch, options.appendChunks))
    }

    const run = (): { runId: string } => ({ runId: `bench-${randomUUID()}` })
    const tails: TailLatencyRow[] = []
    const memoryRun = run()
    tails.push(await tailLatency('memoryStream', 'same process', null, memoryStream(memoryRun), memoryStream(memoryRun), options.tailSamples, 3))
    const sqliteRun = run()
    tails.push(await tailLatency('sqlite (WAL file)', 'second connection (as another process)', 25, sqlite.stream(sqliteRun), sqliteOther.stream(sqliteRun), options.tailSamples, 3))
    const same = run()
    tails.push(await tailLatency(postgres, 'same pool (NOTIFY)', null, pg.stores.stream(same), pg.stores.stream(same), options.tailSamples, 3))
    const second = run()
    tails.push(await tailLatency(postgres, 'second pool (as another process, NOTIFY)', null, pg.stores.stream(second), other.stream(second), options.tailSamples, 3))
    return { locks, appends, tails }
  } finally {
    sqlite.close()
    sqliteOther.close()
    await rm(dir, { recursive: true, force: true })
    await other.close()
    await pg.release()
  }
}

/**
 * Takeover latency (attach to the first new chunk through
 * `resumeServerSentEventsResponse` + `sandboxRunDriver`, the bench of
 * `takeover-latency.ts`) over the PostgreSQL stores beside the in-memory ones:
 * the claim in the database, the quiet window read through `snapshot()`, the
 * alignment against the stored log, and appends through `atEpoch`. The
 * end-to-end figure with a killed process, the lease expiry and the real CLI
 * is the soak's (`postgres-takeover-soak.ts`).
 * @param options.runs - Runs per row.
 * @param options.windows - `fenceQuietMs` values, in ms.
 * @param options.attaches - Concurrent attach counts.
 * @throws BenchError when no PostgreSQL can be reached, or a run was driven twice.
 */
export async function benchPostgresTakeoverLatency(options: { runs: number; windows: readonly number[]; attaches: readonly number[] }): Promise<TakeoverLatencyRow[]> {
  const pg = await suitePostgres('bench_latency')
  if ('missing' in pg) throw new BenchError(`the PostgreSQL takeover bench needs PostgreSQL: ${pg.missing}`)
  try {
    const stores = { name: 'postgres (127.0.0.1)', open: () => ({ runs: pg.stores.runs, locks: pg.stores.locks, stream: (source: Request | { runId: string }) => pg.stores.stream(source) }) }
    return [...(await benchTakeoverLatency({ ...options, stores: IN_MEMORY_STORES })), ...(await benchTakeoverLatency({ ...options, stores }))]
  } finally {
    await pg.release()
  }
}

/** Print the tables of {@link benchPostgresStores} and {@link benchPostgresTakeoverLatency}. */
export function printPostgresStores(stores: PostgresStoresBench, takeover: readonly TakeoverLatencyRow[]): void {
  console.log('\n(t) PostgreSQL stores (@tanstack/ai-sandbox-postgres) beside SQLite and the in-memory ones: lock acquire+release, append throughput, tail latency (append called -> tailer received)')
  console.table(stores.locks.map((row) => ({ ...row, medianMs: round(row.medianMs, 3), p95Ms: round(row.p95Ms, 3) })))
  console.table(stores.appends.map((row) => ({ ...row, chunksPerSecond: Math.round(row.chunksPerSecond) })))
  console.table(stores.tails.map((row) => ({ ...row, medianMs: round(row.medianMs, 2), p95Ms: round(row.p95Ms, 2) })))
  console.log('\n(t) takeover latency on PostgreSQL beside in-memory: attach to the first new chunk through resumeServerSentEventsResponse + sandboxRunDriver, 1,000 of 2,000 chunks stored (exactly one drive per run)')
  console.table(takeover.map((row) => ({ ...row, medianMs: round(row.medianMs, 1), p95Ms: round(row.p95Ms, 1), overQuietMs: round(row.overQuietMs, 1) })))
}
