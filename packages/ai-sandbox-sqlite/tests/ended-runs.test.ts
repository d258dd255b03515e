// Issue 28 item 5: a run that ended `failed` keeps its thread's sandbox
// (reuse 'thread': the next turn may retry in it), and once its host is gone
// no keepAlive timer retires it. A sweep with `endedRunGraceMs` finds it and
// reclaims the sandbox, through the public API: a durable withSandbox on a
// real local-process sandbox over the SQLite stores, and reapDetachedRuns
// with sandboxReclaimer (whose provider's destroy fails once, as a provider
// API answering 503 would, and is retried). A sweep without the option leaves
// it; a later sweep finds nothing left; a thread with an active run, and a
// sandbox a later run took, are left alone.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chat, EventType, type AdapterYieldChunk, type StreamChunk } from '@tanstack/ai'
import { defineSandbox, reapDetachedRuns, sandboxReclaimer, SandboxConfigError, withSandbox, type SandboxProvider } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { sandboxAdapter, type SandboxTextAdapter } from '@testing/support/store-suites/with-sandbox'
import { afterAll, describe, expect, it } from 'vitest'
import type { SqliteStores } from '../src/index.js'
import { tempDatabases } from './helpers/temp-db.js'

const dbs = tempDatabases()
const root = mkdtempSync(join(tmpdir(), 'sqlite-ended-runs-'))

afterAll(() => {
  expect(readdirSync(root), 'every sandbox was destroyed').toEqual([])
  rmSync(root, { recursive: true, force: true })
})

/** An adapter that starts in the sandbox, then fails (the model went away). */
const failingAdapter = (): SandboxTextAdapter<'failing'> =>
  sandboxAdapter('failing', async function* (options): AsyncIterable<AdapterYieldChunk> {
    yield { type: EventType.RUN_STARTED, runId: options.runId!, threadId: options.threadId!, timestamp: Date.now() } as StreamChunk
    throw new Error('the model went away')
  })

/** The local-process provider whose `destroy` fails its first `failures` calls (a provider API answering 503). */
function flakyDestroy(provider: SandboxProvider, failures: number): SandboxProvider {
  return new Proxy(provider, {
    get(target, property, receiver) {
      if (property === 'destroy') {
        return async (input: Parameters<SandboxProvider['destroy']>[0]) => {
          if (failures-- > 0) throw new Error('destroy answered 503')
          return target.destroy(input)
        }
      }
      const value = Reflect.get(target, property, receiver) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** Run one durable turn that fails; resolves with the chunks read before chat() rethrew the adapter's error. */
async function failRun(stores: SqliteStores, provider: SandboxProvider, runId: string, threadId: string): Promise<StreamChunk[]> {
  const sandbox = defineSandbox({ id: 'ended-runs', provider, lifecycle: { reuse: 'thread', destroyOnComplete: true } })
  await stores.runs.createOrResume({ runId, threadId, startedAt: Date.now() })
  const chunks: StreamChunk[] = []
  const stream = chat({
    adapter: failingAdapter(),
    messages: [{ role: 'user', content: 'go' }],
    threadId,
    runId,
    middleware: [withSandbox(sandbox, { runs: stores.runs, locks: stores.locks, instances: stores.instances, durability: { adapter: stores.stream({ runId }) } })],
  })
  try {
    for await (const chunk of stream as AsyncIterable<StreamChunk>) chunks.push(chunk)
  } catch {
    // chat() may rethrow the adapter's error after its RUN_ERROR
  }
  return chunks
}

function sweepOptions(stores: SqliteStores, provider: SandboxProvider, now: number) {
  return {
    runs: stores.runs,
    locks: stores.locks,
    durability: (runId: string) => stores.stream({ runId }),
    hasFinished: async () => ({ state: 'unknown' as const }),
    drive: () => {
      throw new Error('no detached run to drive in this test')
    },
    now,
    detachedRunTtlMs: 30 * 60_000,
    reclaim: sandboxReclaimer({ provider, instances: stores.instances }),
  }
}

describe('reapDetachedRuns with endedRunGraceMs', () => {
  it('reclaims the sandbox a failed run left up, once its grace passed; a sweep without the option, or before the grace, leaves it', async () => {
    const stores = dbs.open()
    const provider = flakyDestroy(localProcessSandbox({ root }), 1)
    const chunks = await failRun(stores, provider, 'run-failed', 'thread-1')
    expect(chunks[0]?.type).toBe(EventType.RUN_STARTED)
    const record = (await stores.runs.get('run-failed'))!
    expect(record).toMatchObject({ status: 'failed', sandboxKey: expect.any(String), finishedAt: expect.any(Number) })
    const instance = (await stores.instances.get(record.sandboxKey!))!
    expect(existsSync(join(root, instance.providerSandboxId)), 'the failed run kept its thread sandbox').toBe(true)

    const later = record.finishedAt! + 2 * 60_000
    expect((await reapDetachedRuns(sweepOptions(stores, provider, later))).ended, 'not swept without the option').toEqual([])
    expect((await reapDetachedRuns({ ...sweepOptions(stores, provider, record.finishedAt! + 30_000), endedRunGraceMs: 60_000 })).ended, 'not within the grace').toEqual([])
    expect(existsSync(join(root, instance.providerSandboxId))).toBe(true)

    const swept = await reapDetachedRuns({ ...sweepOptions(stores, provider, later), endedRunGraceMs: 60_000 })
    expect(swept.ended).toEqual([{ runId: 'run-failed', threadId: 'thread-1', status: 'failed', reclaim: expect.objectContaining({ reclaimed: true, providerSandboxId: instance.providerSandboxId }) }])
    expect(existsSync(join(root, instance.providerSandboxId)), 'the sandbox is destroyed').toBe(false)
    expect(await stores.instances.get(record.sandboxKey!)).toBeNull()

    const again = await reapDetachedRuns({ ...sweepOptions(stores, provider, later + 1000), endedRunGraceMs: 60_000 })
    expect(again.ended).toEqual([{ runId: 'run-failed', threadId: 'thread-1', status: 'failed', reclaim: expect.objectContaining({ reclaimed: false, reason: 'unknown-key' }) }])
  })

  it('leaves the sandbox of a thread that has an active run, and one a later run of the thread took', async () => {
    const stores = dbs.open()
    const provider = localProcessSandbox({ root })
    await failRun(stores, provider, 'run-a', 'thread-a')
    const a = (await stores.runs.get('run-a'))!
    await stores.runs.createOrResume({ runId: 'run-a2', threadId: 'thread-a', startedAt: Date.now() })
    const later = a.finishedAt! + 2 * 60_000
    const busy = await reapDetachedRuns({ ...sweepOptions(stores, provider, later), endedRunGraceMs: 60_000 })
    expect(busy.ended).toEqual([{ runId: 'run-a', threadId: 'thread-a', status: 'failed', error: expect.objectContaining({ message: expect.stringContaining('has an active run (run-a2)') }) }])
    const instance = (await stores.instances.get(a.sandboxKey!))!
    expect(existsSync(join(root, instance.providerSandboxId))).toBe(true)

    // The later run takes the sandbox, then ends.
    await stores.instances.upsert({ ...instance, latestRunId: 'run-a2', updatedAt: Date.now() })
    await stores.runs.update('run-a2', { status: 'completed', finishedAt: Date.now() })
    const reused = await reapDetachedRuns({ ...sweepOptions(stores, provider, later), endedRunGraceMs: 60_000, endedRunLookbackMs: 60 * 60_000 })
    expect(reused.ended.find((entry) => entry.runId === 'run-a')?.reclaim).toMatchObject({ reclaimed: false, reason: 'reused' })
    expect(existsSync(join(root, instance.providerSandboxId))).toBe(true)
    await provider.destroy({ id: instance.providerSandboxId })
  })

  it('refuses endedRunGraceMs without reclaim, naming the option', () => {
    const stores = dbs.open()
    const { reclaim: _, ...withoutReclaim } = sweepOptions(stores, localProcessSandbox({ root }), Date.now())
    expect(() => reapDetachedRuns({ ...withoutReclaim, endedRunGraceMs: 60_000 })).toThrow(SandboxConfigError)
    expect(() => reapDetachedRuns({ ...withoutReclaim, endedRunGraceMs: 60_000 })).toThrow(/reapDetachedRuns\.endedRunGraceMs.*reclaim/)
  })
})
