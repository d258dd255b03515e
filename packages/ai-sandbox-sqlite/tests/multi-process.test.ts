// Several real OS processes sharing one database file (tests/fixtures/store-child.ts):
// two contenders are never inside one key at once; a holder killed with
// SIGKILL is taken over at once (its row names a pid that no longer runs), or
// once its lease expires with detectDeadHolders off; a holder paused with
// SIGSTOP past its lease loses the key to the other process and, after
// SIGCONT, its signal aborts; a reader in one process tails what another
// appends until it closes; processes racing snapshot appends on one head or
// for one free snapshot lease have one winner (those cases are the shared suite's,
// @testing/support/store-suites/multi-process); two processes ensuring one
// thread's sandbox make one sandbox (with a per-process lock instead, they
// make two). Every child is killed and reaped after its test, every sandbox
// destroyed.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runMultiProcessSuite } from '@testing/support/store-suites/multi-process'
import { expect, it } from 'vitest'
import { openSqliteDatabase } from '../src/index.js'
import { sqliteTarget } from './helpers/temp-db.js'

runMultiProcessSuite(sqliteTarget, {
  fixture: fileURLToPath(new URL('./fixtures/store-child.ts', import.meta.url)),
  // The first child to open the file creates it.
  shared: async (places) => places.place(),
  at: (_, path) => ({ path }),
  lockRow: async (_, path, key) => {
    const db = openSqliteDatabase(path)
    try {
      const row = db.prepare('SELECT holder, expires_at FROM locks WHERE key = ?').get(key) as { holder: string; expires_at: number } | undefined
      return row && { holder: row.holder, expires: row.expires_at }
    } finally {
      db.close()
    }
  },
  deadHolder: 'its row names a pid that no longer runs',
  holderPattern: (pid) => new RegExp(` pid:${pid} `),
  expiryLeaseMs: 3000,
  // Long enough that a holder starved of CPU on a loaded machine still renews (every leaseMs / 3) until the stop.
  stopLeaseMs: 3000,
  stopLostReasons: ['taken'],
  // Rows hold this host's Date.now().
  clockSlackMs: 0,
  own: (places, { start, file }) => {
    // Without a shared lock both processes create a sandbox and core's record claim destroys the loser;
    // with the SQLite lock the second process waits and resumes the first one's.
    // The control's creates meet at a barrier, so neither records its sandbox before the other has looked (a slow
    // process would otherwise find the first one's record and resume it). Then they record in turn, so the second
    // finds the first one's record when it claims: run at the same instant, the two could both keep their own in the
    // window a get/upsert store leaves open (docs/lifecycle.md), which a cold CI run hit once.
    it.each([
      { lock: 'the SQLite lock', memoryLocks: false, creates: 1 },
      { lock: 'a per-process InMemoryLockStore (the control)', memoryLocks: true, creates: 2 },
    ])('two processes ensuring one thread with $lock create $creates sandbox(es) and both use one', async ({ memoryLocks, creates }) => {
      const path = places.place()
      const root = mkdtempSync(join(tmpdir(), 'sqlite-ensure-'))
      const goFile = file()
      const createBarrier = memoryLocks ? { dir: file(), count: 2 } : undefined
      const ids: string[] = []
      try {
        const racers = [0, 1].map(() => start({ role: 'ensure', path, root, threadId: 'thread-1', goFile, memoryLocks, createBarrier }))
        await Promise.all(racers.map((racer) => racer.next('ready')))
        writeFileSync(goFile, '')
        ids.push(...(await Promise.all(racers.map((racer) => racer.next('ensured')))).map((e) => e.id as string))
        expect(new Set(ids).size).toBe(1)
        expect(racers.flatMap((racer) => racer.events.filter((e) => e.event === 'create'))).toHaveLength(creates)
        expect(readdirSync(root)).toHaveLength(1)
      } finally {
        const provider = localProcessSandbox({ root })
        for (const id of new Set(ids)) await provider.destroy({ id })
        expect(readdirSync(root)).toEqual([])
        rmSync(root, { recursive: true, force: true })
      }
    })
  },
})
