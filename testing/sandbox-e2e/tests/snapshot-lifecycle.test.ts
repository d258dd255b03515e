/**
 * Snapshot-after-setup in ensure(): resume a running sandbox, else restore the
 * snapshot (setup skipped), else create and bootstrap. Proven with a setup
 * step that leaves a marker in the workspace and bumps a counter on the host.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createSecrets, defineSandbox, defineWorkspace, InMemorySandboxInstanceStore } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { withTarSnapshots } from './helpers/snapshotting-provider.js'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('snapshots')
const host = mkdtempSync(join(tmpdir(), 'tsbx-snap-host-'))

afterAll(() => {
  rmSync(host, { recursive: true, force: true })
  const left = tmp.entries()
  tmp.cleanup()
  expect(left).toEqual([])
})

function setupCount(counter: string): number {
  return existsSync(counter) ? readFileSync(counter, 'utf8').trim().split('\n').length : 0
}

function fixture(name: string, lifecycle: Parameters<typeof defineSandbox>[0]['lifecycle'] = {}) {
  const counter = join(host, `${name}.count`)
  const provider = withTarSnapshots(localProcessSandbox({ root: tmp.root }), join(host, `${name}-snaps`))
  const secrets = createSecrets({ SNAP_SECRET: 'snap-secret-value' })
  const sandbox = defineSandbox({
    id: name,
    provider,
    workspace: defineWorkspace({ secrets, setup: [`echo ran >> ${counter}`, 'echo built > marker.txt'] }),
    lifecycle,
  })
  const instances = new InMemorySandboxInstanceStore()
  const ensure = (threadId: string) => sandbox.ensure({ threadId, runId: `r-${Math.random()}`, instances })
  const drop = async (threadId: string) => {
    // Simulate a sandbox that went away (keepAlive expired, host restarted) while its record stayed.
    const record = await instances.get(sandbox.key({ threadId, runId: '' }))
    await provider.destroy({ id: record!.providerSandboxId })
  }
  const cleanup = async (...threads: string[]) => {
    for (const threadId of threads) await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }), instances })
  }
  return { counter, provider, sandbox, instances, ensure, drop, cleanup }
}

describe('snapshot after setup', () => {
  it('restores the snapshot instead of running setup again, for the thread and for new threads', async () => {
    const f = fixture('snap-basic')
    const first = await f.ensure('t1')
    expect(setupCount(f.counter)).toBe(1)
    const record = await f.instances.get(f.sandbox.key({ threadId: 't1', runId: '' }))
    expect(record?.latestSnapshotId, 'the record carries the snapshot').toMatch(/^tarsnap-/)
    expect(record?.updatedAt, 'the record has only the spec fields, updatedAt among them').toBeTypeOf('number')

    const resumed = await f.ensure('t1')
    expect(resumed.id, 'a running sandbox is resumed, not restored').toBe(first.id)

    await f.drop('t1')
    const restored = await f.ensure('t1')
    expect(restored.id).not.toBe(first.id)
    expect(readFileSync(join(restored.workspaceRoot, 'marker.txt'), 'utf8').trim()).toBe('built')
    expect(setupCount(f.counter), 'setup was skipped').toBe(1)
    expect((await restored.process.exec('echo $SNAP_SECRET')).stdout.trim(), 'secrets are applied after a restore').toBe('snap-secret-value')
    expect((await f.instances.get(f.sandbox.key({ threadId: 't1', runId: '' })))?.latestSnapshotId).toBe(record?.latestSnapshotId)

    const other = await f.ensure('t2')
    expect(readFileSync(join(other.workspaceRoot, 'marker.txt'), 'utf8').trim()).toBe('built')
    expect(setupCount(f.counter), 'a new thread of the same workspace restores too').toBe(1)
    await f.cleanup('t1', 't2')
  })

  it('takes no snapshot of an empty workspace without setup (it would hold nothing a new sandbox lacks)', async () => {
    const store = join(host, 'empty-snaps')
    const provider = withTarSnapshots(localProcessSandbox({ root: tmp.root }), store)
    const sandbox = defineSandbox({ id: 'snap-empty', provider, lifecycle: { snapshot: 'after-setup' } })
    const instances = new InMemorySandboxInstanceStore()
    await sandbox.ensure({ threadId: 't-empty', runId: 'r1', instances })
    const record = await instances.get(sandbox.key({ threadId: 't-empty', runId: '' }))
    expect(record?.latestSnapshotId).toBeUndefined()
    expect(existsSync(store) ? readdirSync(store) : [], 'no snapshot was taken').toEqual([])
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-empty', runId: '' }), instances })
  })

  it('never restores the snapshot of a different workspace under the same definition id', async () => {
    const store = join(host, 'shared-snaps')
    const provider = withTarSnapshots(localProcessSandbox({ root: tmp.root }), store)
    const instances = new InMemorySandboxInstanceStore()
    const make = (letter: string) => defineSandbox({ id: 'snap-same-id', provider, workspace: defineWorkspace({ setup: [`echo ${letter} > which.txt`] }) })
    const a = make('A')
    await a.ensure({ threadId: 't-a', runId: 'r1', instances })
    const b = make('B')
    const handle = await b.ensure({ threadId: 't-b', runId: 'r1', instances })
    expect(readFileSync(join(handle.workspaceRoot, 'which.txt'), 'utf8').trim(), "B's own setup ran; A's snapshot was not restored").toBe('B')
    await a.destroy({ key: a.key({ threadId: 't-a', runId: '' }), instances })
    await b.destroy({ key: b.key({ threadId: 't-b', runId: '' }), instances })
  })

  it('rebuilds a snapshot older than snapshotMaxAge and deletes the replaced one', async () => {
    const f = fixture('snap-age', { snapshotMaxAge: 1 })
    await f.ensure('t1')
    const old = f.provider.snapshots()
    await new Promise((resolve) => setTimeout(resolve, 20))
    await f.drop('t1')
    await f.ensure('t1')
    expect(setupCount(f.counter), 'an expired snapshot is not restored').toBe(2)
    expect(f.provider.snapshots()).toHaveLength(1)
    expect(f.provider.snapshots()).not.toEqual(old)
    await f.cleanup('t1')
  })

  it("takes no snapshot with snapshot: 'none'", async () => {
    const f = fixture('snap-none', { snapshot: 'none' })
    await f.ensure('t1')
    await f.drop('t1')
    await f.ensure('t1')
    expect(setupCount(f.counter)).toBe(2)
    expect(f.provider.snapshots()).toEqual([])
    expect((await f.instances.get(f.sandbox.key({ threadId: 't1', runId: '' })))?.latestSnapshotId).toBeUndefined()
    await f.cleanup('t1')
  })

  it('falls back to a fresh bootstrap when the snapshot cannot be restored', async () => {
    const f = fixture('snap-gone')
    await f.ensure('t1')
    for (const id of f.provider.snapshots()) await f.provider.deleteSnapshot!({ snapshotId: id })
    await f.drop('t1')
    const handle = await f.ensure('t1')
    expect(setupCount(f.counter)).toBe(2)
    expect(existsSync(join(handle.workspaceRoot, 'marker.txt'))).toBe(true)
    await f.cleanup('t1')
  })

  it('skips snapshots silently on providers without them', async () => {
    const counter = join(host, 'plain.count')
    const sandbox = defineSandbox({ id: 'snap-plain', provider: localProcessSandbox({ root: tmp.root }), workspace: defineWorkspace({ setup: [`echo ran >> ${counter}`] }), lifecycle: { snapshot: 'after-setup' } })
    expect(sandbox.lifecycle.snapshot).toBe('none')
    await sandbox.ensure({ threadId: 't1', runId: 'r1' })
    expect(setupCount(counter)).toBe(1)
    await sandbox.destroy({ key: sandbox.key({ threadId: 't1', runId: '' }) })
  })

  it('warns once when it snapshots with the in-memory instance store, and not with a store given to it (second new-user run, M3)', async () => {
    const f = fixture('snap-warn')
    const warnings: string[] = []
    const logger = { sandbox: () => undefined, warn: (message: string) => void warnings.push(message), errors: () => undefined } as never
    // No instances: the definition's own in-memory store, which only this process can read.
    await f.sandbox.ensure({ threadId: 'tw1', runId: 'r-w1', logger })
    await f.sandbox.ensure({ threadId: 'tw2', runId: 'r-w2', logger })
    expect(warnings.filter((message) => /after-setup snapshot with the in-memory instance store/.test(message)), 'once per definition').toHaveLength(1)
    expect(warnings[0]).toMatch(/persistent instance store .*lifecycle: \{ snapshot: 'none' \}/)
    const other = fixture('snap-nowarn')
    const quiet: string[] = []
    await other.sandbox.ensure({ threadId: 'tq', runId: 'r-q', instances: other.instances, logger: { sandbox: () => undefined, warn: (message: string) => void quiet.push(message), errors: () => undefined } as never })
    expect(quiet).toEqual([])
    for (const threadId of ['tw1', 'tw2']) await f.sandbox.destroy({ key: f.sandbox.key({ threadId, runId: '' }) })
    await other.cleanup('tq')
  })
})
