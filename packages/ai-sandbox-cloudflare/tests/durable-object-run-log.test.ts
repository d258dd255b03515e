/**
 * `DurableObjectRunEventLog` in real workerd (Miniflare), in a SQLite-backed
 * Durable Object with its storage in a temp folder: the rules every run
 * event log keeps, core's RunStore and StreamDurability kits over its
 * bindings, core's instance-store kit over `durableObjectInstanceStore`,
 * a record in the legacy layout migrated in place, and a restart
 * (Miniflare disposed and started again on the same storage) that finds
 * every run and event and goes on numbering after them. The Durable Object
 * starts no container; the lab needs the engine and stand-in image only for
 * the Worker's `Sandbox` export, and skips naming them when missing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runDurableRunFieldsConformance, runSandboxInstanceStoreConformance, runStreamDurabilityConformance } from '@tanstack/ai-sandbox/testkit'
import { describeWithDocker } from '@testing/support/docker-engine'
import { afterAll, expect, it } from 'vitest'
// The entry also re-exports the SDK's Sandbox class, which only workerd can load: Node imports the modules.
import { runLogStore, runLogStream } from '../src/agent/run-log-bindings.js'
import { cloudflareTestLab, type CloudflareTestLab } from './helpers/lab.js'
import { remoteInstanceStore, remoteRunLog } from './helpers/remote-run-log.js'
import { describeRunEventLog, text } from './helpers/run-log-cases.js'

const storage = mkdtempSync(join(tmpdir(), 'cf-run-log-'))
const entry = fileURLToPath(new URL('./helpers/run-log-worker.ts', import.meta.url))
const startLab = (): Promise<CloudflareTestLab> => cloudflareTestLab({ entry, durableObjects: { RunLog: 'RunLogObject' }, persist: storage })
let lab = await startLab()
const objectName = (): string => `log-${Math.random().toString(36).slice(2)}`

describeWithDocker('DurableObjectRunEventLog in workerd', lab.reason, () => {
  afterAll(async () => {
    await lab.close()
    rmSync(storage, { recursive: true, force: true })
  }, 60_000)

  // One object for the rule cases (each uses run ids of its own), a fresh one per kit case.
  const shared = objectName()
  describeRunEventLog('DurableObjectRunEventLog', () => remoteRunLog(lab.lab.url.href, shared))
  runDurableRunFieldsConformance('runLogStore(DurableObjectRunEventLog)', () => runLogStore(remoteRunLog(lab.lab.url.href, objectName())))
  runStreamDurabilityConformance('runLogStream(DurableObjectRunEventLog)', {
    makeStores: () => {
      const log = remoteRunLog(lab.lab.url.href, objectName())
      return { stream: (source) => runLogStream(log, source) }
    },
  })

  runSandboxInstanceStoreConformance('durableObjectInstanceStore', () => remoteInstanceStore(lab.lab.url.href, objectName()))

  it('migrates a record stored in the legacy layout in place on first read', async () => {
    const log = remoteRunLog(lab.lab.url.href, objectName())
    await log.putRaw('legacy-1', { runId: 'legacy-1', status: 'done', createdAt: 1_000, updatedAt: 2_000, lastSeq: -1 })
    const expected = { runId: 'legacy-1', threadId: 'legacy-1', status: 'completed', startedAt: 1_000, finishedAt: 2_000, updatedAt: 2_000, lastSeq: -1 }
    expect(await log.get('legacy-1')).toEqual(expected)
    expect(await log.list({ status: 'completed' })).toEqual([expected])
    // Written back: the row now holds core's layout, so the RunStore view reads it as any other.
    expect(await runLogStore(log).get('legacy-1')).toEqual({ runId: 'legacy-1', threadId: 'legacy-1', status: 'completed', startedAt: 1_000, finishedAt: 2_000 })
  })

  it('a restart on the same storage finds every run and event, and numbering goes on after them', async () => {
    const name = objectName()
    let log = remoteRunLog(lab.lab.url.href, name)
    await log.open({ runId: 'run-r', threadId: 'thread-r' })
    await log.append('run-r', [text('a'), text('b')])
    await log.update('run-r', { detachedSince: 42 })

    await lab.close()
    lab = await startLab()
    log = remoteRunLog(lab.lab.url.href, name)

    expect(await log.get('run-r')).toMatchObject({ runId: 'run-r', threadId: 'thread-r', status: 'running', detachedSince: 42, lastSeq: 1 })
    expect((await log.snapshot('run-r')).map((event) => [event.seq, (event.chunk as { delta: string }).delta])).toEqual([
      [0, 'a'],
      [1, 'b'],
    ])
    expect(await log.append('run-r', [text('c')])).toEqual([2])
  }, 120_000)
})
