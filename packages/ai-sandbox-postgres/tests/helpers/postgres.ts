// The PostgreSQL gate and per-file schemas of the suites. The URL comes from
// tests/global-setup.ts; without one a suite registers one skipped test that
// names what is missing, or, under REQUIRE_POSTGRES=1 (CI), one failing test.
// Every schema a file creates (a random name) is dropped after the file, and
// every store set is closed after its test. Also the PostgreSQL store target
// of the shared store suites (@testing/support/store-suites), whose places
// are such schemas.
import { randomBytes } from 'node:crypto'
import type { StorePlaces, StoreTarget } from '@testing/support/store-suites/target'
import pg from 'pg'
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest'
import { createPostgresStores, PostgresDatabaseError, PostgresLockLostError, PostgresStreamError, type PostgresStores, type PostgresStoresOptions } from '../../src/index.js'

/** The URL of the suites' PostgreSQL, or `null`. */
export const POSTGRES_URL = inject('postgresUrl')
const MISSING = inject('postgresMissing')

/** True when a missing PostgreSQL must fail the run instead of skipping it. */
const REQUIRED = process.env.REQUIRE_POSTGRES === '1'

/**
 * Register `suite` when PostgreSQL is there; otherwise one skipped (or, under
 * REQUIRE_POSTGRES=1, failing) test that names what is missing.
 */
export function describePostgres(name: string, suite: (url: string) => void): void {
  if (POSTGRES_URL !== null && POSTGRES_URL !== undefined) {
    const url = POSTGRES_URL
    describe(name, () => suite(url))
    return
  }
  const missing = MISSING ?? 'no PostgreSQL URL was provided (run the tests through the root vitest config, which runs tests/global-setup.ts)'
  describe(name, () => {
    if (REQUIRED) {
      it(`needs PostgreSQL (REQUIRE_POSTGRES=1): ${missing}`, () => {
        throw new Error(`REQUIRE_POSTGRES=1 but ${missing}`)
      })
    } else {
      it.skip(`skipped — ${missing}`, () => undefined)
    }
  })
}

/** A fresh schema name, unique per call. */
export function randomSchema(): string {
  return `t_${randomBytes(6).toString('hex')}`
}

/** Schemas of one test file. */
export interface TempSchemas {
  /** A new schema name, dropped after the file. */
  schema: () => string
  /** Stores on a fresh (or the given) schema of the suites' database, closed after the current test. */
  open: (options?: Partial<PostgresStoresOptions>) => Promise<PostgresStores>
  /** A plain pool (ended after the file), for the tests' own queries. */
  pool: () => pg.Pool
}

/**
 * Temp schemas for the current test file (call inside {@link describePostgres}):
 * `open()` creates stores on a new schema; every schema is dropped after the
 * file and checked gone.
 */
export function tempSchemas(url: string): TempSchemas {
  const schemas = new Set<string>()
  const opened: PostgresStores[] = []
  let admin: pg.Pool | undefined
  const pool = (): pg.Pool => {
    if (admin === undefined) {
      admin = new pg.Pool({ connectionString: url, max: 4 })
      admin.on('error', () => undefined)
    }
    return admin
  }
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((stores) => stores.close()))
  })
  afterAll(async () => {
    const db = pool()
    for (const name of schemas) await db.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`)
    const { rows } = await db.query('SELECT nspname FROM pg_namespace WHERE nspname = ANY($1)', [[...schemas]])
    expect(rows, 'every schema of the file was dropped').toEqual([])
    await db.end()
  })
  const schema = (): string => {
    const name = randomSchema()
    schemas.add(name)
    return name
  }
  return {
    schema,
    pool,
    async open(options = {}) {
      const name = options.schema ?? schema()
      schemas.add(name)
      const connection = options.pool ? {} : { connectionString: url, maxConnections: 6 }
      const stores = await createPostgresStores({ ...connection, ...options, schema: name })
      opened.push(stores)
      // Open connections up front, as a serving replica's pool has them: a first query that must connect first (tens of
      // ms on a loaded machine) would otherwise reorder racing hosts that the kits start in the same tick.
      await Promise.all(Array.from({ length: 3 }, () => stores.pool.query('SELECT 1')))
      return stores
    },
  }
}

/** The places of a shared suite over PostgreSQL: schemas of {@link tempSchemas} on the suites' server. */
export interface PostgresPlaces extends StorePlaces<PostgresStores> {
  /** The server's URL. */
  readonly url: string
  /** The block's temp schemas, for the package's own cases. */
  readonly schemas: TempSchemas
  open(options?: Partial<PostgresStoresOptions> & { place?: string }): Promise<PostgresStores>
}

/** The PostgreSQL stores as the shared store suites see them: a place is a schema, each store set has its own pool. */
export const postgresTarget: StoreTarget<PostgresStores, PostgresPlaces> = {
  label: 'PostgreSQL',
  prefix: 'postgres',
  words: { place: 'one PostgreSQL schema', peers: 'two pools on one schema', peer: 'another pool' },
  errors: { database: PostgresDatabaseError, stream: PostgresStreamError, lockLost: PostgresLockLostError },
  describe(name, body) {
    describePostgres(name, (url) => {
      const schemas = tempSchemas(url)
      body({
        url,
        schemas,
        place: schemas.schema,
        open: ({ place, ...options } = {}) => schemas.open(place === undefined ? options : { ...options, schema: place }),
      })
    })
  },
}
