/**
 * The stores a run server (`run-server.ts`) shares with every other server of
 * a suite, chosen by configuration: one SQLite file on this host
 * (`@tanstack/ai-sandbox-sqlite`) or one PostgreSQL schema
 * (`@tanstack/ai-sandbox-postgres`). Both give the same four stores with the
 * engine-enforced epoch fence, so the routes do not change with the choice;
 * only how the stores are opened and closed does.
 */
import type { LockStore } from '@tanstack/ai/locks'
import type { RunStore, StreamDurability, UpsertableStreamDurability } from '@tanstack/ai'
import type { EpochFencedRunStore, EpochFencedStreamDurability, LockProbe, SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { createPostgresStores } from '@tanstack/ai-sandbox-postgres'
import { createSqliteStores } from '@tanstack/ai-sandbox-sqlite'

/** Where the servers of a suite keep their runs, locks, instances and logs. */
export type StoresConfig = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; schema?: string }

/** The stores a server uses, whichever engine holds them. */
export interface ServerStores {
  readonly runs: RunStore & EpochFencedRunStore
  readonly locks: LockStore & LockProbe
  readonly instances: SandboxInstanceStore
  stream(source: Request | { runId: string; offset?: string | null }): UpsertableStreamDurability & EpochFencedStreamDurability & StreamDurability
  close(): Promise<void>
}

/**
 * Open the stores `config` names, with the lock lease `leaseMs`.
 * @throws what the store factory throws (an unreachable PostgreSQL, a bad path).
 */
export async function openServerStores(config: StoresConfig, leaseMs: number): Promise<ServerStores> {
  if (config.kind === 'sqlite') {
    const stores = createSqliteStores({ path: config.path, leaseMs })
    return { runs: stores.runs, locks: stores.locks, instances: stores.instances, stream: (source) => stores.stream(source), close: () => Promise.resolve(stores.close()) }
  }
  const stores = await createPostgresStores({ connectionString: config.url, leaseMs, ...(config.schema !== undefined ? { schema: config.schema } : {}) })
  return { runs: stores.runs, locks: stores.locks, instances: stores.instances, stream: (source) => stores.stream(source), close: () => stores.close() }
}
