// createSqliteStores options and openSqliteDatabase: zod-validated options
// naming the field (the refusal table runs through the shared
// @testing/support/store-suites/options), the typed open failures, and
// migrations run once.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { itRefusesOptions, thrown } from '@testing/support/store-suites/options'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { createSqliteStores, openSqliteDatabase, SCHEMA_VERSION, SqliteDatabaseError } from '../src/index.js'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()

describe('createSqliteStores options', () => {
  itRefusesOptions(createSqliteStores, [
    [{}, 'createSqliteStores.path', /expected the database file path/],
    [{ path: '' }, 'createSqliteStores.path', /non-empty/],
    [{ path: 'x.db', leaseMs: 10 }, 'createSqliteStores.leaseMs', /at least 30 ms/],
    [{ path: 'x.db', leaseMs: 1.5 }, 'createSqliteStores.leaseMs', /integer number of milliseconds/],
    [{ path: 'x.db', pollMs: 0 }, 'createSqliteStores.pollMs', /at least 1 ms/],
    [{ path: 'x.db', busyTimeoutMs: -1 }, 'createSqliteStores.busyTimeoutMs', /at least 0 ms/],
    [{ path: 'x.db', lease: 5 }, 'createSqliteStores.lease', /Unrecognized key/i],
  ])
})

describe('openSqliteDatabase', () => {
  it('turns on WAL and busy_timeout and migrates to SCHEMA_VERSION, once', () => {
    const path = dbs.path()
    const first = openSqliteDatabase(path, { busyTimeoutMs: 1234 })
    expect(first.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(first.pragma('busy_timeout', { simple: true })).toBe(1234)
    expect(first.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION)
    first.prepare("INSERT INTO locks (key, holder, expires_at) VALUES ('k', 'h', 1)").run()
    const second = openSqliteDatabase(path)
    expect(second.prepare('SELECT COUNT(*) AS n FROM locks').get()).toEqual({ n: 1 })
    first.close()
    second.close()
  })

  it('refuses a file migrated by a newer version: schema-too-new', () => {
    const path = dbs.path()
    const raw = new Database(path)
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`)
    raw.close()
    const error = thrown(() => createSqliteStores({ path }))
    expect(SqliteDatabaseError.isInstance(error) && error.reason).toBe('schema-too-new')
    expect((error as Error).message).toMatch(/Upgrade @tanstack\/ai-sandbox-sqlite/)
  })

  it('refuses a missing directory and a file that is not a database: open-failed', () => {
    const missing = thrown(() => openSqliteDatabase(join(dbs.dir, 'no-such-dir', 'x.db')))
    expect(SqliteDatabaseError.isInstance(missing) && missing.reason).toBe('open-failed')
    const notDb = dbs.path('not-a-db.db')
    writeFileSync(notDb, 'this is plain text, not a SQLite file, long enough to have a header'.repeat(20))
    const garbage = thrown(() => openSqliteDatabase(notDb))
    expect(SqliteDatabaseError.isInstance(garbage) && garbage.reason).toBe('open-failed')
    expect((garbage as SqliteDatabaseError).path).toBe(notDb)
  })

  it('close() is idempotent', () => {
    const stores = dbs.open()
    stores.close()
    expect(() => stores.close()).not.toThrow()
  })
})
