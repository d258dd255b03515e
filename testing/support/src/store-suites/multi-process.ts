/**
 * Several real OS processes on one place of a package's stores (its
 * store-child fixture, see children.ts and store-child.ts): two contenders
 * are never inside one key at once; a holder killed with SIGKILL is taken over
 * at once, or once its lease expires with detectDeadHolders off; a holder
 * paused with SIGSTOP past its lease loses the key to the other process and,
 * after SIGCONT, its signal aborts; a reader in one process tails what another
 * appends until it closes; processes racing snapshot appends on one head, or
 * for one free snapshot lease, have exactly one winner, round after round. The package's own
 * cases join the describe block.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { hashSandboxSnapshotManifest, SANDBOX_SNAPSHOT_MANIFEST_VERSION, type SandboxCheckpointInput, type SandboxCheckpointLease, type SandboxSnapshotManifest } from '@tanstack/ai-sandbox'
import { afterAll, expect, it } from 'vitest'
import { childProcesses, type StartChild } from './children.js'
import type { StorePlaces, StoreTarget, SuiteStores } from './target.js'

/** A lock row as the test reads it: its holder, and when it expires in ms on this host's clock. */
export interface LockRow {
  holder: string
  expires: number
}

/** What the multi-process suite needs from the package beyond its target. */
export interface MultiProcessSuiteHooks<S extends SuiteStores, P extends StorePlaces<S>> {
  /** Absolute path of the package's store-child fixture. */
  fixture: string
  /** A place the children share, ready for them to open (a new database file; a migrated schema). */
  shared(places: P): Promise<string>
  /** The command fields that point a child at `place`. */
  at(places: P, place: string): Record<string, unknown>
  /** The lock row of `key` at `place`, read outside the children. */
  lockRow(places: P, place: string, key: string): Promise<LockRow | undefined>
  /** How a killed holder's row shows it is dead, in the test name ('its row names a pid that no longer runs'). */
  deadHolder: string
  /** What the row of a holder child `pid` names, for that test. */
  holderPattern(pid: number): RegExp
  /** The lease of the detectDeadHolders: false case. */
  expiryLeaseMs: number
  /** The lease of the SIGSTOP case: a holder starved of CPU on a loaded machine must still renew until the stop. */
  stopLeaseMs: number
  /** The reasons a holder resumed after SIGCONT may report its signal aborted with. */
  stopLostReasons: readonly string[]
  /** How far a row's expiry (read back) may be ahead of this host's clock: 0 when rows hold this host's Date.now(). */
  clockSlackMs: number
  /** How a tailing reader is woken, in the test name ('woken by NOTIFY'); nothing when it polls. */
  tailWake?: string
  /** Register the package's own cases in the same describe block; `file()` names a new file in the suite's temp folder. */
  own?(places: P, children: { start: StartChild; file: () => string }): void
}

/** Register the multi-process cases (see the module header) as the describe block 'several processes on <place>'. */
export function runMultiProcessSuite<S extends SuiteStores, P extends StorePlaces<S>>(target: StoreTarget<S, P>, hooks: MultiProcessSuiteHooks<S, P>): void {
  target.describe(`several processes on ${target.words.place}`, (places) => {
    const { start } = childProcesses(hooks.fixture)
    const dir = mkdtempSync(join(tmpdir(), `${target.prefix}-multi-process-`))
    let n = 0
    const file = (): string => join(dir, `f-${++n}`)
    afterAll(() => rmSync(dir, { recursive: true, force: true }))
    const lockRow = (place: string, key: string) => hooks.lockRow(places, place, key)

    it('two processes contending for one key are never both inside', async () => {
      const place = await hooks.shared(places)
      const at = hooks.at(places, place)
      const logFile = file()
      const goFile = file()
      const rounds = 40
      const a = start({ role: 'contend', ...at, key: 'k', rounds, logFile, goFile })
      const b = start({ role: 'contend', ...at, key: 'k', rounds, logFile, goFile })
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
      expect(await lockRow(place, 'k')).toBeUndefined()
    })

    it('processes racing snapshot appends on one head, and acquisitions of one free snapshot lease: exactly one of each wins, every time', async () => {
      const place = await hooks.shared(places)
      const at = hooks.at(places, place)
      const { checkpoints } = (await places.open({ place })).snapshots.stores
      const manifest: SandboxSnapshotManifest = { version: SANDBOX_SNAPSHOT_MANIFEST_VERSION, entries: [] }
      // Ten rounds: each process appends to the same ten empty threads in the same order, on the head null.
      const threads = Array.from({ length: 10 }, () => `race-${randomUUID()}`)
      const leases = await Promise.all(threads.map(async (threadId) => (await checkpoints.acquireLease(threadId, { owner: 'parent', ttlMs: 60_000 }))!))
      const appends = () => leases.map((lease): { lease: SandboxCheckpointLease; checkpoint: SandboxCheckpointInput } => ({ lease, checkpoint: { threadId: lease.threadId, checkpointId: randomUUID(), kind: 'run', manifest, manifestSha256: hashSandboxSnapshotManifest(manifest), messageCount: 0, artifacts: [], createdAt: 1 } }))
      const free = Array.from({ length: 10 }, () => `race-lease-${randomUUID()}`)
      const goFile = file()
      const appenders = [0, 1, 2].map(() => start({ role: 'snapshot-race', ...at, goFile, appends: appends() }))
      const acquirers = ['w', 'x', 'y'].map((owner) => start({ role: 'snapshot-race', ...at, goFile, threadIds: free, owner }))
      const racers = [...appenders, ...acquirers]
      await Promise.all(racers.map((child) => child.next('ready')))
      writeFileSync(goFile, '')
      const results = (await Promise.all(racers.map((child) => child.next('raced')))).map((event) => event.results as string[])
      for (const child of racers) expect(await child.exited).toBe(0)
      const round = (from: number, to: number, i: number) => results.slice(from, to).map((r) => r[i]).sort()
      for (let i = 0; i < threads.length; i++) {
        expect(round(0, 3, i), `of appends racing on one head exactly one lands (round ${i})`).toEqual(['head-moved', 'head-moved', 'ok'])
        expect((await checkpoints.list(threads[i]!)).length).toBe(1)
        expect(round(3, 6, i), `of processes racing for a free lease exactly one gets it (round ${i})`).toEqual(['held', 'held', 'ok'])
      }
    })

    it(`a holder killed with SIGKILL mid-lease is taken over at once: ${hooks.deadHolder}`, async () => {
      const place = await hooks.shared(places)
      const at = hooks.at(places, place)
      // A lease far longer than the test: only the dead-holder check can hand the key over in time.
      const leaseMs = 60_000
      const goFile = file()
      const holder = start({ role: 'hold', ...at, key: 'k', leaseMs })
      const taker = start({ role: 'take', ...at, key: 'k', leaseMs, goFile })
      await Promise.all([holder.next('acquired'), taker.next('ready')])
      writeFileSync(goFile, '')
      await taker.next('waiting')
      const row = (await lockRow(place, 'k'))!
      expect(row.holder).toMatch(hooks.holderPattern(holder.process.pid!))
      const killedAt = Date.now()
      holder.process.kill('SIGKILL')
      await holder.exited
      const acquired = await taker.next('acquired')
      await taker.next('exit')
      // Not before the kill (the taker may get in before this process has reaped the holder).
      expect(acquired.at).toBeGreaterThanOrEqual(killedAt)
      expect(acquired.at).toBeLessThan(row.expires - 30_000)
      expect(await lockRow(place, 'k')).toBeUndefined()
    })

    it('with detectDeadHolders: false, a holder killed with SIGKILL is taken over only once its lease expires', async () => {
      const place = await hooks.shared(places)
      const at = hooks.at(places, place)
      const leaseMs = hooks.expiryLeaseMs
      const goFile = file()
      const holder = start({ role: 'hold', ...at, key: 'k', leaseMs, detectDeadHolders: false })
      const taker = start({ role: 'take', ...at, key: 'k', leaseMs, goFile, detectDeadHolders: false })
      await Promise.all([holder.next('acquired'), taker.next('ready')])
      writeFileSync(goFile, '')
      await taker.next('waiting')
      holder.process.kill('SIGKILL')
      await holder.exited
      const killedAt = Date.now()
      // What the dead holder left: its row, renewed for the last time before the kill.
      const row = (await lockRow(place, 'k'))!
      expect(row).toBeDefined()
      const acquired = await taker.next('acquired')
      await taker.next('exit')
      // Not before the dead holder's row expired (it renewed up to the kill), and then promptly.
      expect(acquired.at).toBeGreaterThanOrEqual(row.expires - hooks.clockSlackMs)
      expect(acquired.at).toBeGreaterThanOrEqual(killedAt)
      expect(await lockRow(place, 'k')).toBeUndefined()
    })

    it('a holder paused with SIGSTOP past its lease loses the key; after SIGCONT its signal aborts and it never shared the key', async () => {
      const place = await hooks.shared(places)
      const at = hooks.at(places, place)
      const leaseMs = hooks.stopLeaseMs
      const goFile = file()
      const holder = start({ role: 'hold', ...at, key: 'k', leaseMs })
      const taker = start({ role: 'take', ...at, key: 'k', leaseMs, holdMs: 60_000, goFile })
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
      expect(hooks.stopLostReasons).toContain(lost.reason)
      await holder.next('exit')
      // The taker still holds: the resumed holder's release did not delete its row.
      expect(taker.events.some((e) => e.event === 'exit')).toBe(false)
      expect(await lockRow(place, 'k')).toBeDefined()
    })

    it(`a reader in one process tails what another process appends${hooks.tailWake ? `, ${hooks.tailWake},` : ''} until it closes`, async () => {
      const at = hooks.at(places, await hooks.shared(places))
      const count = 20
      const holdFile = file()
      const reader = start({ role: 'tail', ...at, runId: 'run-1' })
      await reader.next('reading')
      // The writer waits after its first chunk until the reader has it: however slowly either process is
      // scheduled, the reader must see that chunk while the log is still open.
      const writer = start({ role: 'append', ...at, runId: 'run-1', count, intervalMs: 15, holdFile })
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

    hooks.own?.(places, { start, file })
  })
}
