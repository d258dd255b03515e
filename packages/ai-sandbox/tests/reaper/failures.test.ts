/**
 * The reaper's helpers when their dependencies fail: `probeRunExit` answers
 * `unknown` (never `finished`) for a failing, throwing or garbled probe;
 * `pruneJournals` resolves with a `list` failure, or keeps a journal as
 * `store-failed`, instead of rejecting or deleting; `reclaimSandbox` rejects
 * with `SandboxReclaimFailedError` `store-failed` when the instance store
 * throws, and tries a throwing `destroy` again before `destroy-failed`. Over the naive host provider (real `sh`, a temp journal folder).
 */
import { InMemoryRunStore, type RunStore } from '@tanstack/ai'
import type { InternalLogger } from '@tanstack/ai/adapter-internals'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { InMemorySandboxInstanceStore, journalPaths, probeRunExit, pruneJournals, reclaimSandbox, SandboxReclaimFailedError, shellQuote, type SandboxHandle } from '../../src/index.js'
import { naiveHostProvider } from '../testkit/naive-host-provider.js'
import { capturingLogger } from './helpers.js'

const root = mkdtempSync(join(tmpdir(), 'reaper-failures-'))
const provider = naiveHostProvider(randomUUID())

afterAll(() => {
  expect(existsSync(join(root, 'journals')) ? readdirSync(join(root, 'journals')) : []).toEqual([])
  rmSync(root, { recursive: true, force: true })
})

/** The handle with `exec` replaced. */
const withExec = (handle: SandboxHandle, exec: SandboxHandle['process']['exec']): SandboxHandle => ({ ...handle, process: { ...handle.process, exec } })

describe('reaper helpers when things fail', () => {
  it('probeRunExit: a failing, throwing or garbled probe is unknown, never finished', async () => {
    const handle = await provider.create({})
    try {
      const failing = await probeRunExit({ handle: withExec(handle, async () => ({ exitCode: 2, stdout: '', stderr: 'tail: not found' })), runId: 'r' })
      expect(failing).toMatchObject({ state: 'unknown', detail: expect.stringMatching(/exited 2.*tail: not found/) })
      const throwing = await probeRunExit({ handle: withExec(handle, async () => Promise.reject(new Error('container gone'))), runId: 'r' })
      expect(throwing).toMatchObject({ state: 'unknown', error: expect.any(Error) })
      const garbled = await probeRunExit({ handle: withExec(handle, async () => ({ exitCode: 0, stdout: 'hello\n', stderr: '' })), runId: 'r' })
      expect(garbled.state).toBe('unknown')
    } finally {
      await handle.destroy()
    }
  })

  it('pruneJournals: a listing that fails resolves with a list failure; a store that throws keeps the journal', async () => {
    const handle = await provider.create({})
    const dir = join(root, 'journals')
    const runId = `prune-${randomUUID()}`
    const paths = journalPaths(runId, dir)
    try {
      const listing = await pruneJournals({ handle: withExec(handle, async () => Promise.reject(new Error('exec refused'))), runs: new InMemoryRunStore(), journalDir: dir })
      expect(listing).toMatchObject({ deleted: [], kept: [], failures: [{ stage: 'list', error: expect.any(Error) }] })
      expect((await handle.process.exec(`mkdir -p ${shellQuote(dir)} && echo '{}' > ${shellQuote(paths.journal)}`)).exitCode).toBe(0)
      const runs = new InMemoryRunStore()
      const broken: RunStore = { ...runs, get: () => Promise.reject(new Error('database is down')), createOrResume: (i) => runs.createOrResume(i), update: (id, p) => runs.update(id, p), findActiveRun: (t) => runs.findActiveRun(t) }
      const { logger, errors } = capturingLogger()
      const kept = await pruneJournals({ handle, runs: broken, journalDir: dir, orphanTtlMs: 0, logger })
      expect(kept).toMatchObject({ deleted: [], kept: [{ runId, reason: 'store-failed' }], failures: [] })
      expect(existsSync(paths.journal), 'a journal whose run cannot be looked up is kept').toBe(true)
      expect(errors.join('\n')).toMatch(/database is down|journal is kept/)
    } finally {
      await handle.process.exec(`rm -f ${shellQuote(paths.journal)}`)
      await handle.destroy()
    }
  })

  it('reclaimSandbox: an instance store that throws rejects with SandboxReclaimFailedError store-failed', async () => {
    const instances = new InMemorySandboxInstanceStore()
    const failing = { get: () => Promise.reject(new Error('kv down')), upsert: (r: Parameters<typeof instances.upsert>[0]) => instances.upsert(r), delete: (k: string) => instances.delete(k) }
    const error = await reclaimSandbox({ provider, instances: failing, sandboxKey: 'k' }).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(SandboxReclaimFailedError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ reason: 'store-failed', sandboxKey: 'k' })
  })

  // Issue 27, item 7: a destroy that fails for a moment no longer leaves the sandbox up for good (no sweep retries a reclaim-failed run).
  it('reclaimSandbox: a destroy that throws is tried again with a doubling delay; only when every try threw does it reject, keeping the record', async () => {
    const handle = await provider.create({})
    const instances = new InMemorySandboxInstanceStore()
    const record = { key: 'k-retry', provider: provider.name, providerSandboxId: handle.id, threadId: 't', latestRunId: 'r', updatedAt: Date.now() }
    let refusals = 2
    const calls: number[] = []
    const flaky = { ...provider, destroy: async (input: { id: string }) => {
      calls.push(Date.now())
      if (refusals-- > 0) throw new Error('device or resource busy')
      await provider.destroy(input)
    } }
    try {
      await instances.upsert(record)
      const lines: string[] = []
      const logger = new Proxy({} as InternalLogger, { get: (_, name) => (name === 'sandbox' ? (message: string) => void lines.push(message) : () => undefined) })
      const outcome = await reclaimSandbox({ provider: flaky, instances, sandboxKey: 'k-retry', runId: 'r', retryDelayMs: 100, logger })
      expect(outcome).toMatchObject({ reclaimed: true, providerSandboxId: handle.id })
      expect(calls).toHaveLength(3)
      expect(calls[1]! - calls[0]!, 'the first delay').toBeGreaterThanOrEqual(95)
      expect(calls[2]! - calls[1]!, 'the second delay doubles').toBeGreaterThanOrEqual(195)
      expect(lines.join('\n')).toMatch(/try 1 of 3: Error: device or resource busy\); trying again in 100 ms/)
      expect(await instances.get('k-retry')).toBeNull()

      // Every try throws: SandboxReclaimFailedError destroy-failed after destroyAttempts tries, and the record stays for a later call.
      await instances.upsert(record)
      calls.length = 0
      refusals = 99
      const error = await reclaimSandbox({ provider: flaky, instances, sandboxKey: 'k-retry', runId: 'r', destroyAttempts: 4, retryDelayMs: 10 }).then(() => undefined, (e: unknown) => e)
      expect(SandboxReclaimFailedError.isInstance(error)).toBe(true)
      expect(error).toMatchObject({ reason: 'destroy-failed', sandboxKey: 'k-retry', message: expect.stringMatching(/threw on each of 4 tries/) })
      expect(calls).toHaveLength(4)
      expect(await instances.get('k-retry')).toMatchObject({ providerSandboxId: handle.id })
      await expect(reclaimSandbox({ provider, instances, sandboxKey: 'k-retry', destroyAttempts: 0 })).rejects.toMatchObject({ field: 'reclaimSandbox.destroyAttempts' })
    } finally {
      await handle.destroy()
    }
  })
})
