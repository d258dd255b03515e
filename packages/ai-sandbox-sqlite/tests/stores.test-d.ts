// The shapes createSqliteStores promises: core's store contracts, the
// upsertable, epoch-fenced log, and options that refuse an unknown key or a missing path.
import type { RunStore, StreamDurability, UpsertableStreamDurability } from '@tanstack/ai'
import type { LockStore } from '@tanstack/ai/locks'
import type { EpochFencedRunStore, EpochFencedStreamDurability, SandboxInstanceStore, SandboxSnapshotPersistence } from '@tanstack/ai-sandbox'
import { expectTypeOf, test } from 'vitest'
import { createSqliteStores, sqliteStream, type SqliteStores, type SqliteStoresOptions } from '../src/index.js'

test('the stores are core contracts', () => {
  expectTypeOf<SqliteStores['runs']>().toExtend<RunStore>()
  expectTypeOf<SqliteStores['runs']['listReclaimable']>().toEqualTypeOf<NonNullable<RunStore['listReclaimable']>>()
  expectTypeOf<SqliteStores['locks']>().toExtend<LockStore>()
  expectTypeOf<SqliteStores['instances']>().toEqualTypeOf<SandboxInstanceStore>()
  expectTypeOf<SqliteStores['snapshots']>().toEqualTypeOf<SandboxSnapshotPersistence>()
  expectTypeOf<ReturnType<SqliteStores['stream']>>().toEqualTypeOf<UpsertableStreamDurability & EpochFencedStreamDurability>()
  expectTypeOf<SqliteStores['runs']>().toExtend<EpochFencedRunStore>()
  expectTypeOf<ReturnType<typeof sqliteStream>>().toExtend<StreamDurability>()
  expectTypeOf<SqliteStores['stream']>().parameter(0).toEqualTypeOf<Request | { runId: string; offset?: string | null }>()
})

test('options: path is required, unknown keys are refused', () => {
  expectTypeOf(createSqliteStores).parameter(0).toEqualTypeOf<SqliteStoresOptions>()
  // @ts-expect-error path is required
  createSqliteStores({ leaseMs: 1000 })
  // @ts-expect-error no such option
  createSqliteStores({ path: 'x.db', lease: 1000 })
})
