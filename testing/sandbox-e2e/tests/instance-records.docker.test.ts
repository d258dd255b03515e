/**
 * The seven-field instance store (spec 003's fields, nothing else) on the real
 * Docker provider: commit snapshots restore with setup skipped,
 * `snapshotMaxAge` measures from the workspace record, and two processes
 * ensuring one thread without a shared lock leave exactly one container.
 * Every container carries a label unique to this file; afterwards none, and
 * no image or volume, may remain. Skips naming the engine when it is not
 * answering, fails instead under REQUIRE_DOCKER=1.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, workspaceSnapshotKey, type SandboxInstanceRecord, type SandboxInstanceStore } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing, engine } from '@testing/support/docker-engine'

const IMAGE = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const RUN = { 'tanstack-test.run': `e2e-records-${randomUUID().slice(0, 8)}` }
const RUN_LABEL = `tanstack-test.run=${RUN['tanstack-test.run']}`
const FIELDS = ['key', 'provider', 'providerSandboxId', 'latestSnapshotId', 'threadId', 'latestRunId', 'updatedAt'] as const

const reason = await dockerMissing([IMAGE], { needsBridge: false })

/** A table with one column per spec 003 field. */
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

/** Ids of this file's containers (running or not) serving `key`. */
async function containersFor(key: string): Promise<string[]> {
  const filters = encodeURIComponent(JSON.stringify({ label: [RUN_LABEL, `tanstack.sandbox.key=${key}`] }))
  return (await engine(`/containers/json?all=1&filters=${filters}`)).body.map((c: { Id: string }) => c.Id)
}

describeWithDocker('the seven-field instance store on Docker', reason, () => {
  const provider = dockerSandbox({ image: IMAGE, labels: RUN, killGraceMs: 500 })

  afterAll(async () => {
    expect((await dockerLeftovers(RUN_LABEL)).containers, 'every container was destroyed').toEqual([])
    await pruneDockerSandboxes({ labels: RUN }) // after-setup snapshots outlive their sandboxes by design
    expect(await dockerLeftovers(RUN_LABEL)).toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  const setup = ['echo seeded > seed.txt', 'date +%s%N > built-at.txt']

  it('restores the commit snapshot with setup skipped, and rebuilds it once older than snapshotMaxAge', async () => {
    expect(provider.capabilities().snapshots, 'Docker has commit snapshots').toBe(true)
    const instances = sevenFieldStore()
    const sandbox = defineSandbox({ id: 'e2e-records-docker', provider, instances, workspace: defineWorkspace({ setup }), lifecycle: { snapshotMaxAge: '1h' } })
    const key = (threadId: string) => sandbox.key({ threadId, runId: '' })
    const workspaceKey = workspaceSnapshotKey({ definitionId: sandbox.id, provider: provider.name, ...(provider.fingerprint ? { providerFingerprint: provider.fingerprint } : {}), workspaceHash: sandbox.workspace.hash })

    const first = await sandbox.ensure({ threadId: 't1', runId: 'r1' })
    const builtAt = await first.fs.read('built-at.txt')
    expect(instances.rows.get(workspaceKey)?.latestSnapshotId, 'the snapshot is recorded in the spec fields').toMatch(/^sha256:/)
    const restored = await sandbox.ensure({ threadId: 't2', runId: 'r2' })
    expect(restored.id).not.toBe(first.id)
    expect(await restored.fs.read('built-at.txt'), 'a new thread restored the snapshot instead of running setup').toBe(builtAt)

    instances.age(workspaceKey, 2 * 3_600_000)
    const rebuilt = await sandbox.ensure({ threadId: 't3', runId: 'r3' })
    expect(await rebuilt.fs.read('built-at.txt'), 'an expired snapshot is not restored: setup ran again').not.toBe(builtAt)
    expect((await sandbox.ensure({ threadId: 't1', runId: 'r4' })).id, 'a running sandbox is resumed whatever its age').toBe(first.id)

    for (const t of ['t1', 't2', 't3']) expect((await sandbox.destroy({ key: key(t) })).destroyed).toBe(true)
  })

  it('two processes ensuring one thread without a shared lock leave exactly one container, used by both runs', async () => {
    const instances = sevenFieldStore()
    const make = () => defineSandbox({ id: 'e2e-records-race', provider, instances, workspace: defineWorkspace({ setup }), lifecycle: { snapshot: 'none' } })
    const [a, b] = [make(), make()]
    const key = a.key({ threadId: 't-race', runId: '' })
    const warnings: string[] = []
    const logger = { warn: (m: string) => void warnings.push(m), errors: () => undefined, sandbox: () => undefined } as never
    const [ha, hb] = await Promise.all([a.ensure({ threadId: 't-race', runId: 'ra', logger }), b.ensure({ threadId: 't-race', runId: 'rb', logger })])
    expect(warnings, 'both processes made a container; the loser said so once').toHaveLength(1)
    expect(warnings[0]).toMatch(/another process created a sandbox for this key at the same time/)
    const recorded = (await instances.get(key))!.providerSandboxId
    expect([ha.id, hb.id], 'both runs got the recorded container').toEqual([recorded, recorded])
    const left = await containersFor(key)
    expect(left, 'exactly one container serves the key').toHaveLength(1)
    expect(left[0], 'the recorded one').toBe((await engine(`/containers/${recorded}/json`)).body.Id)
    expect((await hb.process.exec('echo from-b > b.txt && cat seed.txt')).stdout.trim(), "the loser's handle works").toBe('seeded')
    expect((await ha.process.exec('cat b.txt')).stdout.trim(), 'in the same container').toBe('from-b')
    expect(await a.destroy({ key })).toMatchObject({ destroyed: true })
    expect(await containersFor(key)).toEqual([])
  })
})
