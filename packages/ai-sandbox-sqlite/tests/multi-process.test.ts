// Several real OS processes sharing one database file (tests/fixtures/store-child.ts):
// two contenders are never inside one key at once; a holder killed with
// SIGKILL is taken over once its lease expires; a holder paused with SIGSTOP
// past its lease loses the key to the other process and, after SIGCONT, its
// signal aborts; a reader in one process tails what another appends until it
// closes; two processes ensuring one thread's sandbox make one sandbox (with a
// per-process lock instead, they make two). Every child is killed and reaped
// after its test, every sandbox destroyed.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { afterEach, describe, expect, it } from 'vitest'
import { openSqliteDatabase } from '../src/index.js'
import { tempDatabases } from './helpers/temp-db.js'

const CHILD = fileURLToPath(new URL('./fixtures/store-child.ts', import.meta.url))
const CHILD_TSCONFIG = fileURLToPath(new URL('./fixtures/child.tsconfig.json', import.meta.url))
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
/** Child startup (tsx compiling the sources) can take seconds on a loaded 2-core machine. */
const EVENT_TIMEOUT_MS = 30_000

const dbs = tempDatabases()

interface ChildEvent {
  event: string
  at: number
  pid: number
  [field: string]: unknown
}

interface Child {
  process: ChildProcess
  events: ChildEvent[]
  /** Resolves with the first event named `event` (already seen or still to come). */
  next: (event: string) => Promise<ChildEvent>
  exited: Promise<number | null>
}

const children: Child[] = []

function start(command: Record<string, unknown>): Child {
  const child = spawn(process.execPath, ['--import', TSX_LOADER, CHILD, JSON.stringify(command)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TSX_TSCONFIG_PATH: CHILD_TSCONFIG },
  })
  const events: ChildEvent[] = []
  const listeners = new Set<() => void>()
  let buffered = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (data: string) => {
    buffered += data
    const lines = buffered.split('\n')
    buffered = lines.pop()!
    for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as ChildEvent)
    for (const listener of [...listeners]) listener()
  })
  child.stderr!.setEncoding('utf8').on('data', (data: string) => (stderr += data))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const next = (event: string): Promise<ChildEvent> =>
    new Promise((resolve, reject) => {
      const check = (): boolean => {
        const found = events.find((e) => e.event === event)
        if (found) {
          cleanup()
          resolve(found)
        }
        return found !== undefined
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`child ${JSON.stringify(command)} reported no "${event}" within ${EVENT_TIMEOUT_MS} ms; events ${JSON.stringify(events)}; stderr: ${stderr}`))
      }, EVENT_TIMEOUT_MS)
      const onExit = (): void => {
        if (!check()) {
          cleanup()
          reject(new Error(`child exited before "${event}"; events ${JSON.stringify(events)}; stderr: ${stderr}`))
        }
      }
      const cleanup = (): void => {
        clearTimeout(timer)
        listeners.delete(listener)
        child.off('close', onExit)
      }
      const listener = (): void => void check()
      listeners.add(listener)
      child.once('close', onExit)
      check()
    })
  const handle = { process: child, events, next, exited }
  children.push(handle)
  return handle
}

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.process.exitCode === null && child.process.signalCode === null) {
      child.process.kill('SIGCONT')
      child.process.kill('SIGKILL')
    }
    await child.exited
    expect(child.process.exitCode !== null || child.process.signalCode !== null).toBe(true)
  }
})

function lockRow(path: string, key: string): { holder: string; expires_at: number } | undefined {
  const db = openSqliteDatabase(path)
  try {
    return db.prepare('SELECT holder, expires_at FROM locks WHERE key = ?').get(key) as { holder: string; expires_at: number } | undefined
  } finally {
    db.close()
  }
}

describe('several processes on one database file', () => {
  it('two processes contending for one key are never both inside', async () => {
    const path = dbs.path()
    const logFile = dbs.path('contend.log')
    const rounds = 40
    const goFile = dbs.path('go')
    const a = start({ role: 'contend', path, key: 'k', rounds, logFile, goFile })
    const b = start({ role: 'contend', path, key: 'k', rounds, logFile, goFile })
    await Promise.all([a.next('ready'), b.next('ready')])
    writeFileSync(goFile, '')
    await Promise.all([a.next('exit'), b.next('exit')])
    expect(await a.exited).toBe(0)
    expect(await b.exited).toBe(0)
    const lines = readFileSync(logFile, 'utf8').trim().split('\n')
    expect(lines).toHaveLength(4 * rounds)
    let overlaps = 0
    for (let i = 0; i < lines.length; i += 2) {
      const [enter, exit] = [lines[i]!.split(' '), lines[i + 1]!.split(' ')]
      if (enter[0] !== 'enter' || exit[0] !== 'exit' || enter[1] !== exit[1]) overlaps++
    }
    expect(overlaps).toBe(0)
    // They really contended (the child choreographs its turns so each entry happens while the other process is
    // blocked on the key): the key changed hands between the processes, not once but many times.
    const owners = lines.filter((_, i) => i % 2 === 0).map((line) => line.split(' ')[1])
    const handovers = owners.filter((owner, i) => i > 0 && owner !== owners[i - 1]).length
    expect(new Set(owners).size).toBe(2)
    expect(handovers).toBeGreaterThanOrEqual(2)
    expect(lockRow(path, 'k')).toBeUndefined()
  })

  it('a holder killed with SIGKILL mid-lease is taken over at once: its row names a pid that no longer runs', async () => {
    const path = dbs.path()
    // A lease far longer than the test: only the dead-holder check can hand the key over in time.
    const leaseMs = 60_000
    const goFile = dbs.path()
    const holder = start({ role: 'hold', path, key: 'k', leaseMs })
    const taker = start({ role: 'take', path, key: 'k', leaseMs, goFile })
    await Promise.all([holder.next('acquired'), taker.next('ready')])
    writeFileSync(goFile, '')
    await taker.next('waiting')
    const row = lockRow(path, 'k')!
    expect(row.holder).toContain(` pid:${holder.process.pid} `)
    const killedAt = Date.now()
    holder.process.kill('SIGKILL')
    await holder.exited
    const acquired = await taker.next('acquired')
    await taker.next('exit')
    // Not before the kill (the taker may get in before this process has reaped the holder).
    expect(acquired.at).toBeGreaterThanOrEqual(killedAt)
    expect(acquired.at).toBeLessThan(row.expires_at - 30_000)
    expect(lockRow(path, 'k')).toBeUndefined()
  })

  it('with detectDeadHolders: false, a holder killed with SIGKILL is taken over only once its lease expires', async () => {
    const path = dbs.path()
    const leaseMs = 3000
    const goFile = dbs.path()
    const holder = start({ role: 'hold', path, key: 'k', leaseMs, detectDeadHolders: false })
    const taker = start({ role: 'take', path, key: 'k', leaseMs, goFile, detectDeadHolders: false })
    await Promise.all([holder.next('acquired'), taker.next('ready')])
    writeFileSync(goFile, '')
    await taker.next('waiting')
    holder.process.kill('SIGKILL')
    await holder.exited
    const killedAt = Date.now()
    // What the dead holder left: its row, renewed for the last time before the kill.
    const row = lockRow(path, 'k')!
    const acquired = await taker.next('acquired')
    await taker.next('exit')
    // Not before the dead holder's row expired (it renewed up to the kill), and then promptly.
    expect(acquired.at).toBeGreaterThanOrEqual(row.expires_at)
    expect(acquired.at).toBeGreaterThanOrEqual(killedAt)
    expect(lockRow(path, 'k')).toBeUndefined()
  })

  it('a holder paused with SIGSTOP past its lease loses the key; after SIGCONT its signal aborts', async () => {
    const path = dbs.path()
    // Long enough that a holder starved of CPU on a loaded machine still renews (every leaseMs / 3) until the stop.
    const leaseMs = 3000
    const goFile = dbs.path()
    const holder = start({ role: 'hold', path, key: 'k', leaseMs })
    const taker = start({ role: 'take', path, key: 'k', leaseMs, holdMs: 60_000, goFile })
    await Promise.all([holder.next('acquired'), taker.next('ready')])
    writeFileSync(goFile, '')
    await taker.next('waiting')
    holder.process.kill('SIGSTOP')
    const stoppedAt = Date.now()
    const taken = await taker.next('acquired')
    // The other process got the key while the holder was still stopped.
    expect(holder.events.some((e) => e.event === 'lost')).toBe(false)
    holder.process.kill('SIGCONT')
    const lost = await holder.next('lost')
    expect(lost.reason).toBe('taken')
    expect(taken.at).toBeGreaterThanOrEqual(stoppedAt)
    // The taker still holds: the resumed holder's release did not delete its row.
    await holder.next('exit')
    expect(taker.events.some((e) => e.event === 'exit')).toBe(false)
    expect(lockRow(path, 'k')).toBeDefined()
  })

  it('a reader in one process tails what another process appends until it closes', async () => {
    const path = dbs.path()
    const count = 20
    const holdFile = dbs.path()
    const reader = start({ role: 'tail', path, runId: 'run-1' })
    await reader.next('reading')
    // The writer waits after its first chunk until the reader has it: however slowly either process is
    // scheduled, the reader must see that chunk while the log is still open.
    const writer = start({ role: 'append', path, runId: 'run-1', count, intervalMs: 15, holdFile })
    await reader.next('chunk')
    writeFileSync(holdFile, '')
    const closing = await writer.next('closing')
    await writer.next('closed')
    const ended = await reader.next('ended')
    const received = reader.events.filter((e) => e.event === 'chunk')
    expect(received.map((e) => e.offset)).toEqual(Array.from({ length: count }, (_, i) => String(i)))
    expect(received.map((e) => e.delta)).toEqual(Array.from({ length: count }, (_, i) => `chunk ${i}`))
    // The reader ends only once the writer began to close ('closed' is stamped after close() returned, and may come
    // a few ms after the reader saw the close).
    expect(ended.at).toBeGreaterThanOrEqual(closing.at)
    // Tailing, not a replay after the fact: the first chunk arrived before the writer closed.
    expect(received[0]!.at).toBeLessThan(closing.at)
    expect(await reader.exited).toBe(0)
    expect(await writer.exited).toBe(0)
  })

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
    const path = dbs.path()
    const root = mkdtempSync(join(tmpdir(), 'sqlite-ensure-'))
    const goFile = dbs.path()
    const createBarrier = memoryLocks ? { dir: dbs.path(), count: 2 } : undefined
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
})
