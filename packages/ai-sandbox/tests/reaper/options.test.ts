/**
 * Bad input to the reaper's functions gets a `SandboxConfigError` naming the
 * field and the fix: thrown synchronously by `reapDetachedRuns`,
 * `pruneJournals` and `sandboxReclaimer` (their promises never reject),
 * rejected by `probeRunExit` and `reclaimSandbox`.
 */
import { InMemoryRunStore, memoryStream } from '@tanstack/ai'
import { capturingLogger } from './helpers.js'
import { InMemoryLockStore } from '@tanstack/ai/locks'
import { describe, expect, it } from 'vitest'
import { InMemorySandboxInstanceStore, probeRunExit, pruneJournals, reapDetachedRuns, reclaimSandbox, SandboxConfigError, sandboxReclaimer, type ReapOptions } from '../../src/index.js'

const valid = (): ReapOptions => ({
  runs: new InMemoryRunStore(),
  locks: new InMemoryLockStore(),
  durability: (runId) => memoryStream({ runId }),
  hasFinished: async () => ({ state: 'unknown' }),
  drive: () => {
    throw new Error('unused')
  },
  now: Date.now(),
  detachedRunTtlMs: 60_000,
})

/** The SandboxConfigError `fn` throws synchronously. */
function configError(fn: () => unknown): SandboxConfigError {
  let thrown: unknown
  try {
    fn()
  } catch (error) {
    thrown = error
  }
  expect(SandboxConfigError.isInstance(thrown), `expected a SandboxConfigError, got ${String(thrown)}`).toBe(true)
  return thrown as SandboxConfigError
}

describe('reaper options', () => {
  it('hasFinished and detachedRunTtlMs are required, with messages that say why', () => {
    const { hasFinished: _h, ...noProbe } = valid()
    const probe = configError(() => reapDetachedRuns(noProbe as ReapOptions))
    expect(probe.field).toBe('reapDetachedRuns.hasFinished')
    expect(probe.message).toMatch(/REQUIRED.*never drive a run to learn whether it finished.*probeRunExit/)
    const { detachedRunTtlMs: _t, ...noTtl } = valid()
    const ttl = configError(() => reapDetachedRuns(noTtl as ReapOptions))
    expect(ttl.field).toBe('reapDetachedRuns.detachedRunTtlMs')
    expect(ttl.message).toMatch(/only detached-run TTL/)
  })

  it('a RunStore without listReclaimable (optional in core) resolves an empty sweep, naming why in error and the log (issue 29, spec 000)', async () => {
    const runs = new InMemoryRunStore()
    const noList = { createOrResume: runs.createOrResume.bind(runs), update: runs.update.bind(runs), get: runs.get.bind(runs), findActiveRun: runs.findActiveRun.bind(runs) }
    const { logger, errors } = capturingLogger()
    const result = await reapDetachedRuns({ ...valid(), runs: noList, logger })
    expect(result).toMatchObject({ entries: [], deferred: 0, orphans: [], ended: [] })
    expect(Object.values(result.outcomes).every((n) => n === 0)).toBe(true)
    expect(result.error).toBeInstanceOf(SandboxConfigError)
    expect(result.error).toMatchObject({ field: 'reapDetachedRuns.runs.listReclaimable', message: expect.stringMatching(/nothing was swept/) })
    expect(errors.join('\n')).toMatch(/cannot be reaped/)
  })

  it('unknown and mistyped options are named', () => {
    expect(configError(() => reapDetachedRuns({ ...valid(), ttlMs: 10 } as unknown as ReapOptions)).field).toBe('reapDetachedRuns.ttlMs')
    expect(configError(() => reapDetachedRuns({ ...valid(), fenceQuietMs: -1 })).field).toBe('reapDetachedRuns.fenceQuietMs')
    expect(configError(() => reapDetachedRuns({ ...valid(), maxRuns: 0 })).field).toBe('reapDetachedRuns.maxRuns')
    // Past a Node timer's limit the budget would fire at once and expire finished runs: refused.
    const budget = configError(() => reapDetachedRuns({ ...valid(), runBudgetMs: 2 ** 31 }))
    expect([budget.field, budget.message]).toEqual(['reapDetachedRuns.runBudgetMs', expect.stringMatching(/at most 2147483647 ms/)])
    expect(configError(() => reapDetachedRuns({ ...valid(), detachedRunTtlMs: 2 ** 53 })).message).toMatch(/at most 9007199254740991 ms/)
    expect(configError(() => reapDetachedRuns({ ...valid(), now: '2026' as unknown as number })).field).toBe('reapDetachedRuns.now')
    expect(configError(() => reapDetachedRuns({ ...valid(), reclaim: 'yes' as unknown as ReapOptions['reclaim'] })).field).toBe('reapDetachedRuns.reclaim')
  })

  it('probeRunExit, reclaimSandbox, sandboxReclaimer and pruneJournals name the bad field', async () => {
    await expect(probeRunExit({ handle: {} as never, runId: 'r' })).rejects.toMatchObject({ field: 'probeRunExit.handle' })
    await expect(probeRunExit({ handle: { process: { exec: async () => ({ exitCode: 0, stdout: '', stderr: '' }) } } as never, runId: 'r', journalDir: 'relative' })).rejects.toMatchObject({ field: 'probeRunExit.journalDir' })
    const instances = new InMemorySandboxInstanceStore()
    await expect(reclaimSandbox({ provider: {} as never, instances, sandboxKey: 'k' })).rejects.toMatchObject({ field: 'reclaimSandbox.provider' })
    expect(configError(() => sandboxReclaimer({ provider: { name: 'p', resume: async () => null, destroy: async () => undefined } as never, instances: {} as never })).field).toBe('sandboxReclaimer.instances')
    expect(configError(() => pruneJournals({ handle: { process: { exec: async () => ({ exitCode: 0, stdout: '', stderr: '' }) } } as never, runs: new InMemoryRunStore(), orphanTtlMs: -1 })).field).toBe('pruneJournals.orphanTtlMs')
  })
})
