// createPostgresStores and the factories: zod-validated options naming the
// field, the typed failures (connect-failed, schema-missing, schema-too-new),
// migrations that run once even when several pools migrate at once, schemas
// that keep two apps apart, and close(). The refusal table runs through the
// shared @testing/support/store-suites/options.
import type { SandboxConfigError } from '@tanstack/ai-sandbox'
import { itRefusesOptions, rejection, thrown } from '@testing/support/store-suites/options'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createPostgresStores, migratePostgres, postgresLockStore, postgresRunStore, postgresStream, PostgresDatabaseError, SCHEMA_VERSION } from '../src/index.js'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

const URL_ = 'postgres://postgres@127.0.0.1:1/none'

describe('createPostgresStores options (no database needed)', () => {
  itRefusesOptions(createPostgresStores, [
    [{}, 'createPostgresStores.connectionString', /exactly one of connectionString and pool/],
    [{ connectionString: 'mysql://x' }, 'createPostgresStores.connectionString', /postgres:\/\//],
    [{ connectionString: 42 }, 'createPostgresStores.connectionString', /PostgreSQL URL as a string/],
    [{ pool: {} }, 'createPostgresStores.pool', /node-postgres Pool/],
    [{ connectionString: URL_, leaseMs: 10 }, 'createPostgresStores.leaseMs', /at least 30 ms/],
    [{ connectionString: URL_, leaseMs: 1.5 }, 'createPostgresStores.leaseMs', /integer number of milliseconds/],
    [{ connectionString: URL_, lockPollMs: 0 }, 'createPostgresStores.lockPollMs', /at least 1 ms/],
    [{ connectionString: URL_, recheckMs: 5 }, 'createPostgresStores.recheckMs', /at least 100 ms/],
    [{ connectionString: URL_, firstChunkDeadlineMs: -1 }, 'createPostgresStores.firstChunkDeadlineMs', /at least 0 ms/],
    [{ connectionString: URL_, transactionIdleTimeoutMs: 1 }, 'createPostgresStores.transactionIdleTimeoutMs', /at least 100 ms/],
    [{ connectionString: URL_, schema: 'Bad-Name' }, 'createPostgresStores.schema', /lowercase schema name/],
    [{ connectionString: URL_, schema: 'x'.repeat(49) }, 'createPostgresStores.schema', /at most 48/],
    [{ connectionString: URL_, schema: 'pg_runs' }, 'createPostgresStores.schema', /start with "pg_"/],
    [{ connectionString: URL_, schema: 'information_schema' }, 'createPostgresStores.schema', /information_schema/],
    [{ connectionString: URL_, migrate: 'yes' }, 'createPostgresStores.migrate', /true or false/],
    [{ connectionString: URL_, maxConnections: 2 }, 'createPostgresStores.maxConnections', /at least 3 connections/],
    [{ connectionString: URL_, lease: 5 }, 'createPostgresStores.lease', /Unrecognized key/i],
  ])

  it('the factories name their own options', async () => {
    const pool = new pg.Pool({ connectionString: URL_ })
    try {
      expect((thrown(() => postgresLockStore(pool, { leaseMs: 5 })) as SandboxConfigError).field).toBe('postgresLockStore.leaseMs')
      expect((thrown(() => postgresRunStore(pool, { schema: '1x' })) as SandboxConfigError).field).toBe('postgresRunStore.schema')
      expect((thrown(() => postgresStream(pool, { runId: 'r' }, { recheckMs: 1 })) as SandboxConfigError).field).toBe('postgresStream.recheckMs')
      expect((thrown(() => postgresStream(pool, { runId: 'r' }, { poll: 1 } as never)) as SandboxConfigError).field).toBe('postgresStream.poll')
      const migrate = await rejection(migratePostgres(pool, { schema: 'a b' }))
      expect((migrate as SandboxConfigError).field).toBe('migratePostgres.schema')
    } finally {
      await pool.end()
    }
  })

  it('an unreachable server is connect-failed, naming the schema', async () => {
    const error = await rejection(createPostgresStores({ connectionString: URL_ }))
    expect(PostgresDatabaseError.isInstance(error) && error.reason).toBe('connect-failed')
    expect((error as PostgresDatabaseError).schema).toBe('tanstack_sandbox')
  })
})

describePostgres('migrations and schemas', (url) => {
  const schemas = tempSchemas(url)

  it('migrates once when several pools migrate one schema at once; again is a no-op', async () => {
    const schema = schemas.schema()
    const pools = [0, 1, 2, 3].map(() => new pg.Pool({ connectionString: url, max: 2 }))
    try {
      const results = await Promise.all(pools.map((pool) => migratePostgres(pool, { schema })))
      expect(results.filter((r) => r.from === 0)).toHaveLength(1)
      expect(results.every((r) => r.to === SCHEMA_VERSION)).toBe(true)
      expect(await migratePostgres(pools[0]!, { schema })).toEqual({ from: SCHEMA_VERSION, to: SCHEMA_VERSION })
      const { rows } = await pools[0]!.query(`SELECT version FROM "${schema}".schema_migrations ORDER BY version`)
      expect(rows.map((row: { version: number }) => row.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1))
    } finally {
      await Promise.all(pools.map((pool) => pool.end()))
    }
  })

  it("refuses a schema whose schema_migrations is another tool's (Rails): schema-conflict, and changes nothing", async () => {
    const schema = schemas.schema()
    const pool = new pg.Pool({ connectionString: url, max: 2 })
    try {
      await pool.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".schema_migrations (version character varying NOT NULL PRIMARY KEY); INSERT INTO "${schema}".schema_migrations VALUES ('20240101120000')`)
      const conflict = await rejection(migratePostgres(pool, { schema }))
      expect(PostgresDatabaseError.isInstance(conflict) && conflict.reason).toBe('schema-conflict')
      expect((conflict as Error).message).toContain(`schema "${schema}" already has a schema_migrations table that is not this package's (columns: version character varying)`)
      const viaStores = await rejection(createPostgresStores({ connectionString: url, schema }))
      expect(PostgresDatabaseError.isInstance(viaStores) && viaStores.reason, 'createPostgresStores migrates, and refuses the same way').toBe('schema-conflict')
      const { rows } = await pool.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, [schema])
      expect(rows.map((row: { table_name: string }) => row.table_name), 'no table of ours was created').toEqual(['schema_migrations'])
    } finally {
      await pool.end()
    }
  })

  it('refuses a schema migrated by a newer version: schema-too-new; a missing schema with migrate: false: schema-missing', async () => {
    const stores = await schemas.open()
    await stores.pool.query(`INSERT INTO "${stores.schema}".schema_migrations (version) VALUES ($1)`, [SCHEMA_VERSION + 1])
    const tooNew = await rejection(createPostgresStores({ connectionString: url, schema: stores.schema }))
    expect(PostgresDatabaseError.isInstance(tooNew) && tooNew.reason).toBe('schema-too-new')
    expect((tooNew as Error).message).toMatch(/Upgrade @tanstack\/ai-sandbox-postgres/)
    const missing = await rejection(createPostgresStores({ connectionString: url, schema: schemas.schema(), migrate: false }))
    expect(PostgresDatabaseError.isInstance(missing) && missing.reason).toBe('schema-missing')
    expect((missing as Error).message).toMatch(/migratePostgres/)
  })

  it('two schemas in one database keep two apps apart', async () => {
    const one = await schemas.open()
    const two = await schemas.open()
    await one.runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
    await one.stream({ runId: 'r' }).append([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'a', timestamp: 1 } as never])
    expect(await two.runs.get('r')).toBeNull()
    expect(await two.stream({ runId: 'r' }).snapshot()).toEqual([])
    expect(await one.stream({ runId: 'r' }).snapshot()).toHaveLength(1)
  })

  it('the factories work over your own pool after migratePostgres; close() of stores on your pool leaves it open', async () => {
    const schema = schemas.schema()
    const pool = new pg.Pool({ connectionString: url, max: 3 })
    try {
      await migratePostgres(pool, { schema })
      const runs = postgresRunStore(pool, { schema })
      await runs.createOrResume({ runId: 'r', threadId: 't', startedAt: 1 })
      expect(await postgresLockStore(pool, { schema, leaseMs: 1000 }).withLock('k', async () => (await runs.get('r'))?.status)).toBe('running')
      const stores = await createPostgresStores({ pool, schema, migrate: false })
      expect(stores.migration).toBeNull()
      await stores.close()
      await stores.close()
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
    } finally {
      await pool.end()
    }
  })
})
