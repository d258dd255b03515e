/**
 * `watchWorkspace` on the real local-process provider (native fs.watch) in a
 * burst: 2,000 files written at once are all reported as created, then all
 * as deleted. A burst is settled by one listing reconcile, so none is lost
 * whatever the native watcher dropped. The 10,000-file figure is in the bench.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { watchWorkspace } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { makeRoot, waitFor } from './helpers/run-chat.js'

const tmp = makeRoot('watch-bursts')
const provider = localProcessSandbox({ root: tmp.root })
const COUNT = 2000

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

describe('watchWorkspace in a burst (local-process, native)', () => {
  it(`reports all ${COUNT} files written at once, and all their deletes`, async () => {
    const handle = await provider.create()
    try {
      const created = new Set<string>()
      const deleted = new Set<string>()
      const watcher = await watchWorkspace(handle, {
        onEvent: (event) => {
          if (!/\/burst\/f\d+$/.test(event.path)) return
          if (event.type === 'create') created.add(event.path)
          if (event.type === 'delete') deleted.add(event.path)
        },
      })
      expect(watcher.mode).toBe('native')
      const dir = join(handle.workspaceRoot, 'burst')
      await mkdir(dir)
      await Promise.all(Array.from({ length: COUNT }, (_, i) => writeFile(join(dir, `f${i}`), 'x')))
      expect(await waitFor(() => created.size === COUNT, 60_000), `${created.size} of ${COUNT} creates`).toBe(true)
      await handle.process.exec('rm -rf burst')
      expect(await waitFor(() => deleted.size === COUNT, 60_000), `${deleted.size} of ${COUNT} deletes`).toBe(true)
      await watcher.stop()
    } finally {
      await handle.destroy()
    }
  })
})
