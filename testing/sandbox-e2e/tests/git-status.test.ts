/**
 * `git.status()` on the real local-process provider returns the real paths
 * of names that plain porcelain output quotes and escapes (spaces, quotes,
 * é, 日本, a newline, a tab, a backslash) and reads a rename's two paths as
 * one entry.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { defineSandbox, defineWorkspace, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { byPath, EXPECTED_ENTRIES, makeOddlyNamedChanges } from './helpers/git-status-names.js'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('git-status')
const handles: SandboxHandle[] = []

afterAll(async () => {
  for (const handle of handles) await handle.destroy()
  const left = tmp.entries()
  tmp.cleanup()
  expect(left).toEqual([])
})

describe('git.status on local-process', () => {
  it('returns the real paths of special and non-ASCII names, and a rename as its new path', async () => {
    const sandbox = defineSandbox({ id: 'git-status-names', provider: localProcessSandbox({ root: tmp.root }), workspace: defineWorkspace({}) })
    const handle = await sandbox.ensure({ threadId: 't1', runId: 'r1' })
    handles.push(handle)
    await makeOddlyNamedChanges(handle, 'repo')
    const status = await handle.git.status({ dir: 'repo' })
    expect(status.branch).toBe('main')
    expect(status.clean).toBe(false)
    expect([...status.entries].sort(byPath)).toEqual(EXPECTED_ENTRIES)
  })
})
