/**
 * The store packages' README snapshot example, run over a package's stores:
 * portable snapshots through chat() (`withPersistence(stores.snapshots)` and
 * `withSandbox(sandbox, { snapshots })`) on a real local-process sandbox with
 * `reuse: 'none'`. Store set "A" runs and checkpoints; store set "B" on the
 * same place (another process, another replica) restores the checkpoint into
 * the next run's new sandbox and forks the thread. Owns its sandbox root and
 * checks every sandbox directory is gone after the block.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSandboxSnapshots, defineSandbox, withSandbox } from '@tanstack/ai-sandbox'
import { withPersistence } from '@tanstack/ai-sandbox/persistence'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { afterAll, expect, it } from 'vitest'
import { runShell } from '../run-shell.js'
import type { StorePlaces, StoreTarget, SuiteStores } from './target.js'

/**
 * Register the case in the target's describe block.
 * @param target - The package's store target.
 */
export function runSnapshotsThroughChatSuite<S extends SuiteStores, P extends StorePlaces<S>>(target: StoreTarget<S, P>): void {
  target.describe(`${target.label} snapshots through chat() (the README's example)`, (places) => {
    const root = mkdtempSync(join(tmpdir(), `${target.prefix}-snapshots-`))
    const provider = localProcessSandbox({ root })
    afterAll(() => {
      const left = readdirSync(root)
      rmSync(root, { recursive: true, force: true })
      expect(left, 'every sandbox directory was removed').toEqual([])
    })

    it(`a run checkpoints into ${target.words.place}; ${target.words.peer} restores it into the next run's new sandbox and forks the thread`, async () => {
      const place = places.place()
      const sandbox = defineSandbox({ id: `${target.prefix}-snap`, provider, lifecycle: { reuse: 'none' } })
      const wire = (stores: S) => {
        const snapshots = createSandboxSnapshots({ persistence: stores.snapshots, sandbox, instances: stores.instances })
        return { snapshots, middleware: [withPersistence(stores.snapshots), withSandbox(sandbox, { instances: stores.instances, snapshots })] }
      }
      const a = wire(await places.open({ place }))
      const first = await runShell({ threadId: 'thread-1', middleware: a.middleware, command: "mkdir -p src && echo 'export const answer = 42' > src/answer.ts && echo written" })
      expect(first.error).toBeUndefined()
      const one = await a.snapshots.latest('thread-1')
      expect(one, 'the successful run wrote checkpoint 1 with its files and transcript').toMatchObject({ sequence: 1, kind: 'run', messageCount: 2 })
      expect(one!.manifest.entries.map((entry) => entry.path)).toEqual(['src/answer.ts'])

      const b = wire(await places.open({ place }))
      const second = await runShell({ threadId: 'thread-1', middleware: b.middleware, command: 'cat src/answer.ts' })
      expect(second.error).toBeUndefined()
      expect(second.text.trim(), 'the new sandbox of the next run starts from the checkpoint').toBe('export const answer = 42')
      expect((await b.snapshots.latest('thread-1'))?.sequence).toBe(2)

      const forked = await b.snapshots.fork({ threadId: 'thread-1', checkpointId: one!.checkpointId, targetThreadId: 'thread-2' })
      expect(forked).toMatchObject({ kind: 'fork', sequence: 1, forkedFrom: { threadId: 'thread-1', checkpointId: one!.checkpointId } })
      const third = await runShell({ threadId: 'thread-2', middleware: a.middleware, command: 'cat src/answer.ts' })
      expect(third.text.trim(), 'the fork restores the selected checkpoint').toBe('export const answer = 42')
    }, 60_000)
  })
}
