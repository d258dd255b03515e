// Issue 27, item 2: durable runs on local-process keep their journals and
// baselines where only the app's user can reach them. The default journal
// folder is the sandbox's own (under the private root, not the host's shared
// /tmp/tanstack-runs); a journal folder or root another user made or can write
// is refused before anything is read or written there. The "another user" is
// uid 65534 (nobody), so the ownership cases need root, which CI has.
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_JOURNAL_DIR, SandboxOperationError, spawnNdjson } from '@tanstack/ai-sandbox'
import type { SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '../src/index.js'
import { rejectionOf, useTempRoot } from './helpers/temp-root.js'

const temp = useTempRoot()
const NOBODY = 65534
const asRoot = process.getuid?.() === 0
const scratch = mkdtempSync(join(tmpdir(), 'lp-private-journal-'))
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true })
  expect(existsSync(scratch)).toBe(false)
})

const collect = async (handle: SandboxHandle, runId: string, dir?: string) => {
  const events: unknown[] = []
  for await (const event of spawnNdjson(handle, `printf '{"n":1}\\n'`, { journal: { runId, ...(dir !== undefined ? { dir } : {}) } })) events.push(event)
  return events
}

describe('local-process journals are private', () => {
  it("journals go to the sandbox's own runs folder (mode 0700), never to the host's shared /tmp/tanstack-runs", async () => {
    const handle = await temp.create()
    expect(handle.journalDir).toBe(join(temp.root, handle.id, 'runs'))
    const runId = `private-${Date.now()}`
    const sharedBefore = existsSync(DEFAULT_JOURNAL_DIR) ? readdirSync(DEFAULT_JOURNAL_DIR) : []
    // A probe agent that reports where its journal is while it runs.
    const events: unknown[] = []
    for await (const event of spawnNdjson(handle, `ls ${join(handle.journalDir!)} | sed 's/.*/{"file":"&"}/'`, { journal: { runId } })) events.push(event)
    expect(events).toEqual([{ file: `${runId}.err` }, { file: `${runId}.ndjson` }])
    expect(statSync(handle.journalDir!).mode & 0o777).toBe(0o700)
    expect(existsSync(DEFAULT_JOURNAL_DIR) ? readdirSync(DEFAULT_JOURNAL_DIR) : []).toEqual(sharedBefore)
  })

  it.skipIf(!asRoot)('a journal folder another user made first is refused, and nothing is written into it (needs root to play the other user)', async () => {
    const handle = await temp.create()
    const planted = join(scratch, 'planted-runs')
    mkdirSync(planted)
    chmodSync(planted, 0o777)
    chownSync(planted, NOBODY, NOBODY)
    const error = await rejectionOf(collect(handle, 'victim-run', planted))
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect((error as SandboxOperationError).reason).toBe('exec-failed')
    expect((error as Error).message).toMatch(/belongs to another user/)
    expect(readdirSync(planted)).toEqual([])
  })

  it('a journal folder that is a link is refused, and nothing is written where it points', async () => {
    const handle = await temp.create()
    const target = join(scratch, 'link-target')
    mkdirSync(target, { mode: 0o700 })
    const link = join(scratch, 'linked-runs')
    symlinkSync(target, link)
    const error = await rejectionOf(collect(handle, 'linked-run', link))
    expect((error as Error).message).toMatch(/is a link or belongs to another user/)
    expect(readdirSync(target)).toEqual([])
  })

  it('a journal folder this user owns is kept at mode 0700 even when it was made wider', async () => {
    const handle = await temp.create()
    const own = join(scratch, 'own-runs')
    mkdirSync(own)
    chmodSync(own, 0o777)
    expect(await collect(handle, 'own-run', own)).toEqual([{ n: 1 }])
    expect(statSync(own).mode & 0o777).toBe(0o700)
  })
})

describe('the local-process root is private', () => {
  it('is created with mode 0700', async () => {
    const root = join(scratch, 'fresh-root')
    const handle = await localProcessSandbox({ root }).create()
    temp.track(handle)
    expect(statSync(root).mode & 0o777).toBe(0o700)
  })

  it('refuses a root its group or other users can write, naming the mode and the fix', async () => {
    const root = join(scratch, 'open-root')
    mkdirSync(root)
    chmodSync(root, 0o777)
    const error = await rejectionOf(localProcessSandbox({ root }).create())
    expect(error).toBeInstanceOf(SandboxOperationError)
    expect((error as SandboxOperationError).reason).toBe('create-failed')
    expect((error as Error).message).toMatch(/can be written by its group or by other users \(mode 777\)/)
    expect((error as Error).message).toContain('localProcessSandbox({ root })')
    expect(readdirSync(root)).toEqual([])
  })

  it.skipIf(!asRoot)('refuses a root another user owns, on every use, not only the first (needs root to play the other user)', async () => {
    const root = join(scratch, 'taken-root')
    const provider = localProcessSandbox({ root })
    const handle = await provider.create()
    temp.track(handle)
    // Handed to another user after the first use: the next create and resume refuse.
    chownSync(root, NOBODY, NOBODY)
    try {
      expect((await rejectionOf(provider.create())) as Error).toMatchObject({ reason: 'create-failed', message: expect.stringMatching(/belongs to user 65534/) })
      expect((await rejectionOf(provider.resume({ id: handle.id }))) as Error).toMatchObject({ reason: 'create-failed' })
    } finally {
      chownSync(root, 0, 0)
    }
  })
})
