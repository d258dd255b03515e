// Processes opening one new database file at the same moment
// (tests/fixtures/open-child.ts): every one of them opens it, in WAL mode at
// the current schema version. Switching a file to WAL takes an exclusive
// lock for which SQLite never calls the busy handler, so without a retry of
// its own a process that lost that race failed at once with "database is
// locked" (SQLITE_BUSY): 17 of 900 opens here before the fix, and a failure of
// the two-process `ensure` case in CI's Node 22 lane. Every child is reaped.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { SCHEMA_VERSION } from '../src/database.js'
import { tempDatabases } from './helpers/temp-db.js'

const CHILD = fileURLToPath(new URL('./fixtures/open-child.ts', import.meta.url))
const CHILD_TSCONFIG = fileURLToPath(new URL('./fixtures/child.tsconfig.json', import.meta.url))
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const PROCESSES = 6
const ROUNDS = 60

const dbs = tempDatabases()

interface Outcome {
  round: number
  journalMode?: string
  version?: number
  reason?: string
  message?: string
}

/** Start one child doing every round; resolves with its outcomes when it exits. */
function opener(dir: string): Promise<{ code: number | null; outcomes: Outcome[]; stderr: string }> {
  const child = spawn(process.execPath, ['--import', TSX_LOADER, CHILD, JSON.stringify({ dir, rounds: ROUNDS })], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TSX_TSCONFIG_PATH: CHILD_TSCONFIG },
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (data: string) => (stdout += data))
  child.stderr.setEncoding('utf8').on('data', (data: string) => (stderr += data))
  return new Promise((resolve) =>
    child.once('close', (code) => resolve({ code, stderr, outcomes: stdout.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as Outcome) })),
  )
}

describe('opening one new database from several processes at once', () => {
  it(`${PROCESSES} processes open each of ${ROUNDS} new files together: every open succeeds, in WAL mode, migrated once`, async () => {
    const dir = dbs.dir
    const children = Array.from({ length: PROCESSES }, () => opener(dir))
    for (let round = 0; round < ROUNDS; round++) {
      writeFileSync(join(dir, `go-${round}`), '')
      // The next file only once every process is done with this one, so the opens of a round race each other.
      const deadline = Date.now() + 60_000
      while (readdirSync(dir).filter((name) => name.startsWith(`done-${round}-`)).length < PROCESSES && Date.now() < deadline) await sleep(1)
    }
    const results = await Promise.all(children)
    for (const { code, stderr } of results) expect(code, stderr.slice(-2000)).toBe(0)
    const failed = results.flatMap((result) => result.outcomes).filter((outcome) => outcome.journalMode !== 'wal' || outcome.version !== SCHEMA_VERSION)
    expect(failed, `${failed.length} of ${PROCESSES * ROUNDS} opens failed`).toEqual([])
    expect(results.flatMap((result) => result.outcomes)).toHaveLength(PROCESSES * ROUNDS)
  }, 120_000)
})
