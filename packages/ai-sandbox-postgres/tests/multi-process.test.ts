// Several real OS processes on one PostgreSQL schema (tests/fixtures/store-child.ts):
// two contenders are never inside one key at once; a holder killed with
// SIGKILL is taken over at once (its session's backend is gone), or once its
// lease expires with detectDeadHolders off; a holder paused with SIGSTOP
// past its lease loses the key to the other process and, after SIGCONT, its
// signal aborts; a holder whose connections the server terminates
// (pg_terminate_backend) sees its signal abort; a reader in one process tails
// what another appends, woken by NOTIFY, until it closes. Every child is
// killed and reaped after its test.
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { childProcesses } from './helpers/children.js'
import { describePostgres, tempSchemas } from './helpers/postgres.js'

describePostgres('several processes on one PostgreSQL schema', (url) => {
  const schemas = tempSchemas(url)
  const { start } = childProcesses()
  const dir = mkdtempSync(join(tmpdir(), 'pg-multi-process-'))
  let n = 0
  const file = (): string => join(dir, `f-${++n}`)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  /** A migrated schema the children share. */
  const shared = async (): Promise<string> => (await schemas.open()).schema

  async function lockRow(schema: string, key: string): Promise<{ holder: string; expires: number } | undefined> {
    const { rows } = await schemas.pool().query<{ holder: string; expires: number }>(`SELECT holder, extract(epoch FROM expires_at) * 1000 AS expires FROM "${schema}".locks WHERE key = $1`, [key])
    return rows[0] ? { holder: rows[0].holder, expires: Number(rows[0].expires) } : undefined
  }

  it('two processes contending for one key are never both inside', async () => {
    const schema = await shared()
    const logFile = file()
    const goFile = file()
    const rounds = 30
    const a = start({ role: 'contend', url, schema, key: 'k', rounds, logFile, goFile })
    const b = start({ role: 'contend', url, schema, key: 'k', rounds, logFile, goFile })
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
    // They really contended: the key changed hands between the processes several times.
    const owners = lines.filter((_, i) => i % 2 === 0).map((line) => line.split(' ')[1])
    expect(new Set(owners).size).toBe(2)
    expect(owners.filter((owner, i) => i > 0 && owner !== owners[i - 1]).length).toBeGreaterThanOrEqual(2)
    expect(await lockRow(schema, 'k')).toBeUndefined()
  })

  it('a holder killed with SIGKILL mid-lease is taken over at once: the server ended its session, whose backend its row names', async () => {
    const schema = await shared()
    // A lease far longer than the test: only the dead-holder check can hand the key over in time.
    const leaseMs = 60_000
    const goFile = file()
    const holder = start({ role: 'hold', url, schema, key: 'k', leaseMs })
    const taker = start({ role: 'take', url, schema, key: 'k', leaseMs, goFile })
    await Promise.all([holder.next('acquired'), taker.next('ready')])
    writeFileSync(goFile, '')
    await taker.next('waiting')
    const row = (await lockRow(schema, 'k'))!
    expect(row.holder).toMatch(/ backend:\d+$/)
    const killedAt = Date.now()
    holder.process.kill('SIGKILL')
    await holder.exited
    const acquired = await taker.next('acquired')
    await taker.next('exit')
    expect(acquired.at).toBeGreaterThanOrEqual(killedAt)
    expect(acquired.at).toBeLessThan(row.expires - 30_000)
    expect(await lockRow(schema, 'k')).toBeUndefined()
  })

  it('with detectDeadHolders: false, a holder killed with SIGKILL is taken over only once its lease expires', async () => {
    const schema = await shared()
    const leaseMs = 1500
    const goFile = file()
    const holder = start({ role: 'hold', url, schema, key: 'k', leaseMs, detectDeadHolders: false })
    const taker = start({ role: 'take', url, schema, key: 'k', leaseMs, goFile, detectDeadHolders: false })
    await Promise.all([holder.next('acquired'), taker.next('ready')])
    writeFileSync(goFile, '')
    await taker.next('waiting')
    holder.process.kill('SIGKILL')
    await holder.exited
    const killedAt = Date.now()
    // What the dead holder left: its row, renewed for the last time before the kill (expiry on the database's clock, this host's).
    const row = (await lockRow(schema, 'k'))!
    expect(row).toBeDefined()
    const acquired = await taker.next('acquired')
    await taker.next('exit')
    expect(acquired.at).toBeGreaterThanOrEqual(killedAt)
    // Not before the dead holder's row expired (same host, one clock; 20 ms for rounding of the two readings).
    expect(acquired.at).toBeGreaterThanOrEqual(row.expires - 20)
    expect(await lockRow(schema, 'k')).toBeUndefined()
  })

  it('a holder paused with SIGSTOP past its lease loses the key; after SIGCONT its signal aborts and it never shared the key', async () => {
    const schema = await shared()
    const leaseMs = 1000
    const goFile = file()
    const holder = start({ role: 'hold', url, schema, key: 'k', leaseMs })
    const taker = start({ role: 'take', url, schema, key: 'k', leaseMs, holdMs: 60_000, goFile })
    await Promise.all([holder.next('acquired'), taker.next('ready')])
    writeFileSync(goFile, '')
    await taker.next('waiting')
    holder.process.kill('SIGSTOP')
    const stoppedAt = Date.now()
    const taken = await taker.next('acquired')
    // The other process got the key while the holder was still stopped (so the holder did nothing meanwhile).
    expect(taken.at).toBeGreaterThanOrEqual(stoppedAt)
    expect(holder.events.some((e) => e.event === 'lost')).toBe(false)
    holder.process.kill('SIGCONT')
    const lost = await holder.next('lost')
    // The local deadline (expired) or the first renewal (taken), whichever runs first after the resume.
    expect(['expired', 'taken']).toContain(lost.reason)
    await holder.next('exit')
    // The taker still holds: the resumed holder's release did not delete its row.
    expect(taker.events.some((e) => e.event === 'exit')).toBe(false)
    const row = await lockRow(schema, 'k')
    expect(row).toBeDefined()
  })

  it("a holder whose connections the server terminates (pg_terminate_backend) sees its signal abort well before the lease's end", async () => {
    const schema = await shared()
    const leaseMs = 30_000
    const holder = start({ role: 'hold', url, schema, key: 'k', leaseMs })
    const acquired = await holder.next('acquired')
    const { rows } = await schemas.pool().query<{ terminated: boolean }>('SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = $1', [`pgchild-${acquired.pid}`])
    expect(rows.length).toBeGreaterThanOrEqual(1)
    expect(rows.every((row) => row.terminated)).toBe(true)
    const lost = await holder.next('lost')
    expect(lost.reason).toBe('renewal-failed')
    expect(lost.at - acquired.at).toBeLessThan(leaseMs / 2)
    await holder.next('exit')
    // Its release went through a fresh pooled connection: the key is free at once, not after the lease.
    expect(await lockRow(schema, 'k')).toBeUndefined()
  })

  it('a reader in one process tails what another process appends, woken by NOTIFY, until it closes', async () => {
    const schema = await shared()
    const count = 20
    const reader = start({ role: 'tail', url, schema, runId: 'run-1' })
    await reader.next('reading')
    const writer = start({ role: 'append', url, schema, runId: 'run-1', count, intervalMs: 15 })
    const closing = await writer.next('closing')
    await writer.next('closed')
    const ended = await reader.next('ended')
    const received = reader.events.filter((e) => e.event === 'chunk')
    expect(received.map((e) => e.offset)).toEqual(Array.from({ length: count }, (_, i) => String(i)))
    expect(received.map((e) => e.delta)).toEqual(Array.from({ length: count }, (_, i) => `chunk ${i}`))
    // The reader ends only once the writer began to close (the writer's 'closed' stamp, taken after close() returned,
    // may come a few ms after the reader saw the close: seen once under load).
    expect(ended.at).toBeGreaterThanOrEqual(closing.at)
    // Tailing, not a replay after the fact: the first chunk arrived before the writer closed.
    expect(received[0]!.at).toBeLessThan(closing.at)
    expect(await reader.exited).toBe(0)
    expect(await writer.exited).toBe(0)
  })
})
