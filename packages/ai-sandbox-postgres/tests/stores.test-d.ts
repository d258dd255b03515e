// The shapes createPostgresStores promises: core's store contracts, the
// upsertable, epoch-fenced log, the fenced run store, and options that
// refuse an unknown key.
import type { RunStore, StreamDurability, UpsertableStreamDurability } from '@tanstack/ai'
import type { LockStore } from '@tanstack/ai/locks'
import type { EpochFencedRunStore, EpochFencedStreamDurability, SandboxInstanceStore, SandboxSnapshotPersistence } from '@tanstack/ai-sandbox'
import { expectTypeOf, test } from 'vitest'
import { createPostgresStores, postgresRunStore, postgresStream, type PostgresStores, type PostgresStoresOptions } from '../src/index.js'

test('the stores are core contracts', () => {
  expectTypeOf<PostgresStores['runs']>().toExtend<RunStore>()
  expectTypeOf<PostgresStores['runs']['listReclaimable']>().toEqualTypeOf<NonNullable<RunStore['listReclaimable']>>()
  expectTypeOf<PostgresStores['runs']>().toExtend<EpochFencedRunStore>()
  expectTypeOf<ReturnType<typeof postgresRunStore>>().toExtend<EpochFencedRunStore>()
  expectTypeOf<PostgresStores['locks']>().toExtend<LockStore>()
  expectTypeOf<PostgresStores['instances']>().toEqualTypeOf<SandboxInstanceStore>()
  expectTypeOf<PostgresStores['snapshots']>().toEqualTypeOf<SandboxSnapshotPersistence>()
  expectTypeOf<ReturnType<PostgresStores['stream']>>().toEqualTypeOf<UpsertableStreamDurability & EpochFencedStreamDurability>()
  expectTypeOf<ReturnType<typeof postgresStream>>().toExtend<StreamDurability>()
  expectTypeOf<PostgresStores['stream']>().parameter(0).toEqualTypeOf<Request | { runId: string; offset?: string | null }>()
  expectTypeOf<PostgresStores['close']>().returns.toEqualTypeOf<Promise<void>>()
})

test('options: unknown keys are refused; the factory is async', () => {
  expectTypeOf(createPostgresStores).parameter(0).toEqualTypeOf<PostgresStoresOptions>()
  expectTypeOf(createPostgresStores).returns.toEqualTypeOf<Promise<PostgresStores>>()
  // @ts-expect-error no such option
  void createPostgresStores({ connectionString: 'postgres://x', lease: 1000 })
})
