// Temp database files for the tests: one directory per test file, removed
// (and checked gone) after the file's tests, and every store closed first.
// Also the SQLite store target of the shared store suites
// (@testing/support/store-suites), whose places are such files.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { StorePlaces, StoreTarget } from '@testing/support/store-suites/target'
import { afterAll, afterEach, describe, expect } from 'vitest'
import { createSqliteStores, SqliteDatabaseError, SqliteLockLostError, SqliteStreamError, type SqliteStores, type SqliteStoresOptions } from '../../src/index.js'

/** The temp databases of one test file (or describe block). */
export interface TempDatabases {
  /** The directory that holds them. */
  dir: string
  /** A file in the directory: `name`, or a new database file name. */
  path: (name?: string) => string
  /** Stores on a fresh (or the given) file, closed after the current test. */
  open: (options?: Partial<SqliteStoresOptions>) => SqliteStores
}

/**
 * A temp directory for this test file's databases. `path(name)` names a file
 * in it; `open(options)` creates stores on a fresh (or the given) file and
 * closes them after the current test.
 */
export function tempDatabases(): TempDatabases {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-stores-'))
  const opened: SqliteStores[] = []
  let n = 0
  afterEach(() => {
    for (const stores of opened.splice(0)) stores.close()
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
    expect(existsSync(dir)).toBe(false)
  })
  const path = (name?: string): string => join(dir, name ?? `db-${++n}.db`)
  return {
    dir,
    path,
    open(options = {}) {
      const stores = createSqliteStores({ path: options.path ?? path(), ...options })
      opened.push(stores)
      return stores
    },
  }
}

/** The places of a shared suite over SQLite: database files of {@link tempDatabases}. */
export interface SqlitePlaces extends StorePlaces<SqliteStores> {
  /** The block's temp databases, for the package's own cases. */
  readonly dbs: TempDatabases
  open(options?: Partial<SqliteStoresOptions> & { place?: string }): SqliteStores
}

/** The SQLite stores as the shared store suites see them: a place is a database file. */
export const sqliteTarget: StoreTarget<SqliteStores, SqlitePlaces> = {
  label: 'SQLite',
  prefix: 'sqlite',
  words: { place: 'one database file', peers: 'two connections to one file', peer: 'another connection' },
  errors: { database: SqliteDatabaseError, stream: SqliteStreamError, lockLost: SqliteLockLostError },
  describe(name, body) {
    describe(name, () => {
      const dbs = tempDatabases()
      body({
        dbs,
        place: () => dbs.path(),
        open: ({ place, ...options } = {}) => dbs.open(place === undefined ? options : { ...options, path: place }),
      })
    })
  },
}
