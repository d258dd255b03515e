/**
 * Issue 28: a run never has two agents. The journal is created exclusively,
 * so of two launches of one run's agent (a takeover that starts a
 * never-launched run fresh, and its first host waking up and launching after
 * all) the second starts nothing: `startJournaledAgent` throws
 * `JournalError` `journal-exists`, and `spawnNdjson` reads the journal the
 * first launch writes instead. Real `sh` through the fake handle.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { JournalError, journalPaths, spawnNdjson, startJournaledAgent } from '../../src/index.js'
import { createFakeHandle } from '../helpers/fake-handle.js'

const root = mkdtempSync(join(tmpdir(), 'tsbx-exclusive-launch-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const handle = createFakeHandle(root)
const dir = join(root, 'journals')

describe('one agent per run', () => {
  it('a second launch of a run finds its journal, starts nothing and says so', async () => {
    const runId = 'launched-twice'
    const paths = await startJournaledAgent(handle, `echo '{"n":1}'; touch ${join(root, 'first')}`, { journal: { runId, dir } })
    const error = await startJournaledAgent(handle, `touch ${join(root, 'second')}`, { journal: { runId, dir }, stdin: 'prompt' }).catch((e: unknown) => e)
    expect(JournalError.isInstance(error) && error.reason).toBe('journal-exists')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(existsSync(join(root, 'first')), 'the first agent ran').toBe(true)
    expect(existsSync(join(root, 'second')), 'the second launch started nothing').toBe(false)
    expect(readdirSync(dirname(paths.journal)).filter((name) => name.includes('.stdin-')), 'nor left its stdin file behind').toEqual([])
    expect(readFileSync(paths.journal, 'utf8').split('\n').filter((line) => line.includes('"__journal"')), 'one header: one launch wrote the journal').toHaveLength(1)
  })

  it('spawnNdjson of a run whose agent another host launched reads that agent', async () => {
    const runId = 'launched-elsewhere'
    await startJournaledAgent(handle, `echo '{"from":"the first host"}'`, { journal: { runId, dir } })
    const events: unknown[] = []
    for await (const event of spawnNdjson(handle, `echo '{"from":"the second host"}'`, { journal: { runId, dir } })) events.push(event)
    expect(events).toEqual([{ from: 'the first host' }])
    expect(existsSync(journalPaths(runId, dir).journal), 'read to its end and deleted').toBe(false)
  })
})
