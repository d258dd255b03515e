// Temp database files for the tests: one directory per test file, removed
// (and checked gone) after the file's tests, and every store closed first.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, expect } from 'vitest'
import { createSqliteStores, type SqliteStores, type SqliteStoresOptions } from '../../src/index.js'

/**
 * A temp directory for this test file's databases. `path(name)` names a file
 * in it; `open(options)` creates stores on a fresh (or the given) file and
 * closes them after the current test.
 */
export function tempDatabases(): { dir: string; path: (name?: string) => string; open: (options?: Partial<SqliteStoresOptions>) => SqliteStores } {
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
