/**
 * A BYO instance store that keeps exactly spec 003's seven record fields
 * (anything else core might write is dropped) supports everything on the real
 * local-process provider (with tar snapshots on the host): resume, snapshot
 * restore with setup skipped, `snapshotMaxAge`, destroy by key from another
 * process, and two processes racing to ensure one thread without a shared
 * lock. Ages are set by rewriting `updatedAt` in the store, never by sleeping.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, workspaceSnapshotKey, type SandboxInstanceRecord, type SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { withTarSnapshots } from './helpers/snapshotting-provider.js'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('records')
const host = mkdtempSync(join(tmpdir(), 'tsbx-records-host-'))
const HOUR = 3_600_000

afterAll(() => {
  rmSync(host, { recursive: true, force: true })
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory was removed').toEqual([])
})

const FIELDS = ['key', 'provider', 'providerSandboxId', 'latestSnapshotId', 'threadId', 'latestRunId', 'updatedAt'] as const

/** A table with one column per spec 003 field; `rows` is the table, for inspecting and ageing rows. */
function sevenFieldStore(): SandboxInstanceStore & { rows: Map<string, Record<string, unknown>>; age: (key: string, ms: number) => void } {
  const rows = new Map<string, Record<string, unknown>>()
  const pick = (record: object) => Object.fromEntries(FIELDS.filter((f) => (record as Record<string, unknown>)[f] !== undefined).map((f) => [f, (record as Record<string, unknown>)[f]]))
  return {
    rows,
    age: (key, ms) => {
      const row = rows.get(key)!
      row.updatedAt = (row.updatedAt as number) - ms
    },
    get: async (key) => (rows.has(key) ? (pick(rows.get(key)!) as unknown as SandboxInstanceRecord) : null),
    upsert: async (record) => void rows.set(record.key, pick(record)),
    delete: async (key) => void rows.delete(key),
  }
}

function setupCount(counter: string): number {
  return existsSync(counter) ? readFileSync(counter, 'utf8').trim().split('\n').length : 0
}

function fixture(name: string, lifecycle: Parameters<typeof defineSandbox>[0]['lifecycle'] = {}) {
  const counter = join(host, `${name}.count`)
  const provider = withTarSnapshots(localProcessSandbox({ root: tmp.root }), join(host, `${name}-snaps`))
  const instances = sevenFieldStore()
  const make = () => defineSandbox({ id: name, provider, instances, workspace: defineWorkspace({ setup: [`echo ran >> ${counter}`, 'echo built > marker.txt'] }), lifecycle })
  const sandbox = make()
  const threadKey = (threadId: string) => sandbox.key({ threadId, runId: '' })
  const workspaceKey = workspaceSnapshotKey({ definitionId: name, provider: provider.name, workspaceHash: sandbox.workspace.hash })
  const drop = async (threadId: string) => {
    // The sandbox went away (keepAlive, a restarted host) while its record stayed.
    await provider.destroy({ id: (await instances.get(threadKey(threadId)))!.providerSandboxId })
  }
  return { counter, provider, instances, sandbox, make, threadKey, workspaceKey, drop }
}

describe('a store with exactly the seven spec fields', () => {
  it('holds nothing but those fields', async () => {
    const f = fixture('rec-fields')
    await f.sandbox.ensure({ threadId: 't1', runId: 'r1' })
    for (const row of f.instances.rows.values()) expect(Object.keys(row).every((k) => (FIELDS as readonly string[]).includes(k)), JSON.stringify(row)).toBe(true)
    expect(f.instances.rows.get(f.threadKey('t1'))).toMatchObject({ latestSnapshotId: expect.stringMatching(/^tarsnap-/), latestRunId: 'r1' })
    await f.sandbox.destroy({ key: f.threadKey('t1') })
  })

  it('restores the after-setup snapshot (setup skipped) for the thread and for a new thread', async () => {
    const f = fixture('rec-restore')
    const first = await f.sandbox.ensure({ threadId: 't1', runId: 'r1' })
    expect(setupCount(f.counter)).toBe(1)
    expect((await f.sandbox.ensure({ threadId: 't1', runId: 'r2' })).id, 'a running sandbox is resumed').toBe(first.id)
    await f.drop('t1')
    const restored = await f.sandbox.ensure({ threadId: 't1', runId: 'r3' })
    expect(restored.id).not.toBe(first.id)
    expect(readFileSync(join(restored.workspaceRoot, 'marker.txt'), 'utf8').trim()).toBe('built')
    const other = await f.sandbox.ensure({ threadId: 't2', runId: 'r4' })
    expect(readFileSync(join(other.workspaceRoot, 'marker.txt'), 'utf8').trim()).toBe('built')
    expect(setupCount(f.counter), 'setup ran once; every later sandbox came from the snapshot').toBe(1)
    for (const t of ['t1', 't2']) await f.sandbox.destroy({ key: f.threadKey(t) })
  })

  it('snapshotMaxAge: a snapshot recorded longer ago than the limit is rebuilt, a younger one restored', async () => {
    const f = fixture('rec-max-age', { snapshotMaxAge: '1h' })
    await f.sandbox.ensure({ threadId: 't1', runId: 'r1' })
    const firstSnapshot = f.instances.rows.get(f.workspaceKey)!.latestSnapshotId
    await f.drop('t1')
    f.instances.age(f.workspaceKey, 59 * 60_000)
    await f.sandbox.ensure({ threadId: 't1', runId: 'r2' })
    expect(setupCount(f.counter), 'a 59-minute-old snapshot is restored').toBe(1)
    await f.drop('t1')
    f.instances.age(f.workspaceKey, 2 * 60_000)
    await f.sandbox.ensure({ threadId: 't1', runId: 'r3' })
    expect(setupCount(f.counter), 'a 61-minute-old snapshot is not').toBe(2)
    const replaced = f.instances.rows.get(f.workspaceKey)!
    expect(replaced.latestSnapshotId, 'the rebuild took a new snapshot').not.toBe(firstSnapshot)
    expect(f.provider.snapshots(), 'and deleted the expired one').toEqual([replaced.latestSnapshotId])
    await f.sandbox.destroy({ key: f.threadKey('t1') })
  })

  it('snapshotMaxAge never retires a sandbox that still runs, however old', async () => {
    const f = fixture('rec-max-age-live', { snapshotMaxAge: '1h' })
    const first = await f.sandbox.ensure({ threadId: 't1', runId: 'r1' })
    await first.fs.write('work.txt', 'the agent was here')
    f.instances.age(f.workspaceKey, 48 * HOUR)
    f.instances.age(f.threadKey('t1'), 48 * HOUR)
    const again = await f.sandbox.ensure({ threadId: 't1', runId: 'r2' })
    expect(again.id, 'resumed, not re-created').toBe(first.id)
    expect(await again.fs.read('work.txt')).toBe('the agent was here')
    expect(setupCount(f.counter)).toBe(1)
    await f.sandbox.destroy({ key: f.threadKey('t1') })
  })

  it('destroy({ key }) from another process finds the sandbox through the store bound with defineSandbox({ instances })', async () => {
    const f = fixture('rec-destroy')
    const handle = await f.sandbox.ensure({ threadId: 't1', runId: 'r1' })
    const otherProcess = f.make()
    expect(await otherProcess.destroy({ key: otherProcess.key({ threadId: 't1', runId: '' }) })).toEqual({ destroyed: true, providerSandboxId: handle.id })
    expect(existsSync(handle.workspaceRoot)).toBe(false)
    expect(await otherProcess.destroy({ key: otherProcess.key({ threadId: 't1', runId: '' }) })).toMatchObject({ destroyed: false, reason: 'unknown-key' })
  })
})

describe('two processes ensuring one thread without a shared lock', () => {
  it('leaves exactly one sandbox, which both runs use; the loser destroys its own', async () => {
    const counter = join(host, 'race.count')
    const provider = localProcessSandbox({ root: tmp.root })
    const instances = sevenFieldStore()
    // One definition per "process": the same store, each with its own in-memory lock.
    const make = () => defineSandbox({ id: 'rec-race', provider, instances, workspace: defineWorkspace({ setup: [`echo ran >> ${counter}`, 'echo built > marker.txt'] }) })
    const [a, b] = [make(), make()]
    const before = tmp.entries()
    const [ha, hb] = await Promise.all([a.ensure({ threadId: 't-race', runId: 'ra' }), b.ensure({ threadId: 't-race', runId: 'rb' })])
    expect(setupCount(counter), 'both processes created and set up a sandbox').toBe(2)
    const created = tmp.entries().filter((e) => !before.includes(e))
    expect(created, 'exactly one sandbox directory is left').toHaveLength(1)
    const recorded = (await instances.get(a.key({ threadId: 't-race', runId: '' })))!.providerSandboxId
    expect([ha.id, hb.id], 'both runs got the recorded sandbox').toEqual([recorded, recorded])
    expect((await ha.process.exec('cat marker.txt')).stdout.trim()).toBe('built')
    expect((await hb.process.exec('echo from-b > b.txt && cat b.txt')).stdout.trim(), "the loser's handle works").toBe('from-b')
    expect((await ha.process.exec('cat b.txt')).stdout.trim(), 'in the same sandbox').toBe('from-b')
    await a.destroy({ key: a.key({ threadId: 't-race', runId: '' }) })
    expect(tmp.entries().filter((e) => !before.includes(e))).toEqual([])
  })
})
