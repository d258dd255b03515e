/**
 * Two processes ensuring one thread without a shared lock (two definitions,
 * one store, each with its own in-memory lock): the one that finds another
 * sandbox recorded, before or after its own write, destroys its own and uses
 * the recorded one. And core never mutates a record it read or wrote, so a
 * store may hand out the objects it holds.
 */
import { describe, expect, it } from 'vitest'
import { defineSandbox, type SandboxInstanceRecord, type SandboxInstanceStore } from '../../src/index.js'
import { memoryProvider } from '../testkit/memory-provider.js'
import { SpecReferenceStore } from '../helpers/spec-stores.js'

const run = (runId: string) => ({ threadId: 'shared-thread', runId })

/** A provider whose live sandboxes can be counted. */
function countingProvider() {
  const provider = memoryProvider()
  const made: string[] = []
  const create = provider.create
  provider.create = async (input) => {
    const handle = await create(input)
    made.push(handle.id)
    return handle
  }
  const live = async () => (await Promise.all(made.map(async (id) => ((await provider.resume({ id })) ? id : null)))).filter((id) => id !== null)
  return { provider, made, live }
}

/** Warnings a run's logger received. */
function warnings() {
  const lines: string[] = []
  const logger = { warn: (m: string) => void lines.push(m), errors: () => undefined, sandbox: () => undefined } as never
  return { lines, logger }
}

describe('ensure without a shared lock', () => {
  it('the process that finds the other sandbox recorded before its write uses it and destroys its own', async () => {
    const { provider, made, live } = countingProvider()
    const store = new SpecReferenceStore()
    const a = defineSandbox({ id: 'race', provider })
    const b = defineSandbox({ id: 'race', provider })
    const log = warnings()
    const [ha, hb] = await Promise.all([a.ensure({ ...run('ra'), instances: store, logger: log.logger }), b.ensure({ ...run('rb'), instances: store, logger: log.logger })])
    expect(made, 'both processes created one').toHaveLength(2)
    const recorded = (await store.get(a.key(run('x'))))!.providerSandboxId
    expect(await live(), 'exactly one sandbox is left: the recorded one').toEqual([recorded])
    expect([ha.id, hb.id], 'both runs got it').toEqual([recorded, recorded])
    await hb.fs.write('from-b.txt', 'b')
    expect(await ha.fs.read('from-b.txt'), 'both write into the one sandbox there is').toBe('b')
    const lost = made.find((id) => id !== recorded)
    expect(log.lines, 'the loser warns once').toHaveLength(1)
    expect(log.lines[0]).toContain(`uses the recorded one (${recorded}) and destroys its own (${lost})`)
    expect(log.lines[0]).toMatch(/another process created a sandbox for this key at the same time \(no lock shared between them\).*setup ran twice.*distributed lock/)
  })

  it('the process whose write was overwritten notices when it reads back, uses the winner and destroys its own', async () => {
    const { provider, made, live } = countingProvider()
    // Both writes land before either process reads back: a store that holds the first upsert until the second arrives.
    const inner = new SpecReferenceStore()
    let held: (() => void) | undefined
    const store: SandboxInstanceStore = {
      get: (key) => inner.get(key),
      delete: (key) => inner.delete(key),
      upsert: (record) => {
        if (!record.key.startsWith('sbx:')) return inner.upsert(record)
        if (held === undefined) {
          return new Promise<void>((resolve) => {
            held = () => void inner.upsert(record).then(resolve)
          })
        }
        const first = held
        held = () => undefined
        first?.()
        return inner.upsert(record)
      },
    }
    const a = defineSandbox({ id: 'race-late', provider })
    const b = defineSandbox({ id: 'race-late', provider })
    const [ha, hb] = await Promise.all([a.ensure({ ...run('ra'), instances: store }), b.ensure({ ...run('rb'), instances: store })])
    expect(made).toHaveLength(2)
    const recorded = (await store.get(a.key(run('x'))))!.providerSandboxId
    expect(recorded, 'the last write won').toBe(made[1])
    expect(await live(), 'exactly one sandbox is left: the recorded one').toEqual([recorded])
    expect([ha.id, hb.id], 'both runs use it').toEqual([recorded, recorded])
  })

  it('keeps its own sandbox when the recorded one is already gone', async () => {
    const { provider, live } = countingProvider()
    const store = new SpecReferenceStore()
    const sandbox = defineSandbox({ id: 'race-gone', provider })
    const key = sandbox.key(run('r1'))
    await store.upsert({ key, provider: 'memory', providerSandboxId: 'mem-gone', threadId: 'shared-thread', updatedAt: Date.now() })
    const handle = await sandbox.ensure({ ...run('r1'), instances: store })
    expect(await live()).toEqual([handle.id])
    expect((await store.get(key))?.providerSandboxId).toBe(handle.id)
  })
})

describe('records are never mutated by core', () => {
  it('works against a store that keeps and returns frozen objects', async () => {
    const rows = new Map<string, SandboxInstanceRecord>()
    const store: SandboxInstanceStore = {
      get: async (key) => rows.get(key) ?? null,
      upsert: async (record) => void rows.set(record.key, Object.freeze(record)),
      delete: async (key) => void rows.delete(key),
    }
    const sandbox = defineSandbox({ id: 'frozen', provider: memoryProvider() })
    const first = await sandbox.ensure({ ...run('r1'), instances: store })
    const again = await sandbox.ensure({ ...run('r2'), instances: store })
    expect(again.id).toBe(first.id)
    expect((await store.get(sandbox.key(run('r2'))))?.latestRunId).toBe('r2')
    expect(await sandbox.destroy({ key: sandbox.key(run('r2')), instances: store })).toMatchObject({ destroyed: true })
  })
})
