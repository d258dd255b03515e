/**
 * watchWorkspace on a real local-process sandbox: the native fs.watch path,
 * with writes through the handle and by processes in the sandbox, nested
 * directories made in one go, a removed tree, ignored folders, and a final
 * flush that leaves nothing unreported.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { watchWorkspace } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { eventLog, perPath } from '@testing/support/event-log'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('watch')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

describe('watchWorkspace on local-process (native fs.watch)', () => {
  it('reports creates, changes and deletes from the handle and from processes, with absolute paths and no directories', async () => {
    const handle = await provider.create()
    try {
      await handle.fs.write('kept.txt', 'v1')
      const log = eventLog()
      const logged: string[] = []
      const watcher = await watchWorkspace(handle, { onEvent: log.onEvent, logger: { sandbox: (m) => void logged.push(m) } })
      expect(watcher.mode).toBe('native')
      const root = handle.workspaceRoot

      await handle.fs.write('new.txt', 'hello')
      expect(await log.until((e) => e.path === `${root}/new.txt`)).toMatchObject({ type: 'create' })
      await handle.fs.write('kept.txt', 'v2')
      expect(await log.until((e) => e.path === `${root}/kept.txt`)).toMatchObject({ type: 'change' })

      const made = await handle.process.exec('mkdir -p deep/er/est && echo x > "deep/er/est/a file.txt" && mkdir -p node_modules/p && echo y > node_modules/p/i.js && rm kept.txt')
      expect(made.exitCode).toBe(0)
      await watcher.flush()
      await handle.fs.remove('deep')
      await watcher.flush()
      await watcher.stop()

      expect(perPath(log.events)).toEqual({
        [`${root}/new.txt`]: 'create',
        [`${root}/kept.txt`]: 'change,delete',
        [`${root}/deep/er/est/a file.txt`]: 'create,delete',
      })
      expect(logged[0]).toMatch(/\(native; ignore \.git, node_modules; files: 1\)$/)
      expect(logged.at(-1)).toMatch(/^stopped watching /)
    } finally {
      await handle.destroy()
    }
  })

  it('sends nothing after stop()', async () => {
    const handle = await provider.create()
    try {
      const log = eventLog()
      const watcher = await watchWorkspace(handle, { onEvent: log.onEvent })
      await watcher.stop()
      await handle.fs.write('late.txt', 'x')
      await watcher.flush()
      expect(log.events).toEqual([])
    } finally {
      await handle.destroy()
    }
  })
})
