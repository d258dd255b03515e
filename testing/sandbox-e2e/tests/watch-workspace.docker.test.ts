/**
 * File events on the Docker provider, which has no native watcher: the
 * portable find + stat poll on BusyBox and on Debian (GNU) tools, through
 * watchWorkspace and through chat() runs (sandbox.file chunks and file.changed
 * diffs; a git workspace on Debian, add-patches on BusyBox, which has no git),
 * and a later run of a thread, whose diffs start at that run's start on Debian.
 * Every container carries a label unique to this file; afterwards none may
 * remain. Skips naming the engine when it is missing; fails under REQUIRE_DOCKER=1.
 */
import { randomUUID } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { defineSandbox, defineWorkspace, FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT, watchWorkspace, withSandbox } from '@tanstack/ai-sandbox'
import { dockerSandbox, pruneDockerSandboxes } from '@tanstack/ai-sandbox-docker'
import { describeWithDocker, dockerLeftovers, dockerMissing } from '@testing/support/docker-engine'
import { eventLog, perPath } from './helpers/event-log.js'
import { runShell } from './helpers/run-chat.js'

const BUSYBOX = process.env.TANSTACK_SANDBOX_BUSYBOX_IMAGE ?? 'tanstack-sandbox-busybox:latest'
const DEBIAN = process.env.TANSTACK_SANDBOX_DEBIAN_IMAGE ?? 'tanstack-sandbox-debian:bookworm'
const RUN = { 'tanstack-test.run': `watch-${randomUUID().slice(0, 8)}` }
const label = `tanstack-test.run=${RUN['tanstack-test.run']}`
const reason = await dockerMissing([BUSYBOX, DEBIAN], { needsBridge: false })

type Custom = { type: 'CUSTOM'; name: string; value: any }
const customs = (chunks: StreamChunk[], name: string) => (chunks as unknown as Custom[]).filter((c) => c.type === 'CUSTOM' && c.name === name).map((c) => c.value)

describeWithDocker('file events on Docker (poll)', reason, () => {
  afterAll(async () => {
    const left = await dockerLeftovers(label)
    await pruneDockerSandboxes({ labels: RUN }) // so that a failure leaks nothing; reported below
    expect(left, 'every container was destroyed by the tests').toEqual({ containers: [], images: [], volumes: [] })
  }, 120_000)

  for (const [name, image] of [
    ['BusyBox', BUSYBOX],
    ['Debian', DEBIAN],
  ] as const) {
    describe(`${name} image`, () => {
      const provider = dockerSandbox({ image, labels: RUN, killGraceMs: 500 })
      const git = image === DEBIAN

      it('watchWorkspace polls: create, same-size change, delete, nested and odd names, ignored folders, a removed tree', async () => {
        const handle = await provider.create()
        try {
          await handle.process.exec('echo v1 > kept.txt && echo bye > gone.txt')
          const log = eventLog()
          const watcher = await watchWorkspace(handle, { onEvent: log.onEvent, intervalMs: 100 })
          expect(watcher.mode).toBe('poll')

          await handle.process.exec(`mkdir -p "deep/er" node_modules/p .git && echo x > "deep/er/a file's.txt" && echo y > node_modules/p/i.js && echo z > .git/HEAD && echo v2 > kept.txt && rm gone.txt`)
          // The poll runs on its own; the flush makes the assertion independent of its timing.
          await log.until((e) => e.path.endsWith('/gone.txt'))
          await watcher.flush()
          // A poll that lands mid-command may see a file half-written: perPath folds such repeats.
          expect(perPath(log.events)).toEqual({ '/workspace/kept.txt': 'change', "/workspace/deep/er/a file's.txt": 'create', '/workspace/gone.txt': 'delete' })

          await handle.process.exec('rm -r deep')
          await watcher.flush()
          await watcher.stop()
          expect(perPath(log.events)["/workspace/deep/er/a file's.txt"]).toBe('create,delete')
          expect(log.events.at(-1)).toMatchObject({ type: 'delete', path: "/workspace/deep/er/a file's.txt" })
        } finally {
          await handle.destroy()
        }
      })

      it('a chat() run streams sandbox.file chunks and a file.changed diff', async () => {
        const sandbox = defineSandbox({
          id: `fe-docker-${name.toLowerCase()}`,
          provider,
          lifecycle: { reuse: 'none', snapshot: 'none' },
          workspace: defineWorkspace({ setup: git ? ['git init -q', 'printf "a\\nb\\n" > notes.txt', 'git add -A', 'git -c user.name=t -c user.email=t@t.invalid commit -qm base'] : ['printf "a\\nb\\n" > notes.txt'] }),
        })
        const out = await runShell({ command: 'printf "a\\nB\\n" > notes.txt && echo new > added.txt && echo ok', threadId: `t-fe-docker-${name}`, middleware: [withSandbox(sandbox)] })
        expect(out.error).toBeUndefined()
        expect(customs(out.chunks, SANDBOX_FILE_EVENT).map((v) => `${v.type} ${v.path}`).sort()).toEqual(['change /workspace/notes.txt', 'create /workspace/added.txt'])
        const changed = customs(out.chunks, FILE_CHANGED_EVENT)
        expect(changed.map((c) => c.path)).toEqual(['/workspace/added.txt', '/workspace/notes.txt'])
        if (git) {
          expect(changed[0].diff).toMatch(/^diff --git a\/added\.txt b\/added\.txt\nnew file mode 100644\n[\s\S]*\+new\n$/)
          expect(changed[1].diff).toContain('--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n')
        } else {
          expect(changed[0].diff).toBe('diff --git a/added.txt b/added.txt\n--- /dev/null\n+++ b/added.txt\n@@ -0,0 +1 @@\n+new\n')
          expect(changed[1].diff, 'no git: an add-patch of the current content').toBe('diff --git a/notes.txt b/notes.txt\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+a\n+B\n')
        }
      })

      it(git ? "a later run of the thread diffs against its own start (a file left untracked shows only this run's line)" : 'a later run of the thread without git: the diff is an add-patch of the whole file', async () => {
        const sandbox = defineSandbox({
          id: `fe-docker-thread-${name.toLowerCase()}`,
          provider,
          lifecycle: { snapshot: 'none' },
          workspace: defineWorkspace({ setup: git ? ['git init -q', 'echo base > tracked.txt', 'git add -A', 'git -c user.name=t -c user.email=t@t.invalid commit -qm base'] : [] }),
        })
        const threadId = `t-fe-docker-thread-${name}`
        try {
          const first = await runShell({ command: 'echo first > notes.txt && echo other > other.txt && echo ok', threadId, middleware: [withSandbox(sandbox)] })
          const second = await runShell({ command: 'echo appended >> notes.txt && echo ok', threadId, middleware: [withSandbox(sandbox)] })
          expect(first.error).toBeUndefined()
          expect(second.error).toBeUndefined()
          const changed = customs(second.chunks, FILE_CHANGED_EVENT)
          expect(changed.map((c) => c.path), 'other.txt was not touched in run 2').toEqual(['/workspace/notes.txt'])
          if (git) expect(changed[0].diff).toMatch(/--- a\/notes\.txt\n\+\+\+ b\/notes\.txt\n@@ -1 \+1,2 @@\n first\n\+appended\n$/)
          else expect(changed[0].diff, 'no git in the image: nothing recorded the start').toBe('diff --git a/notes.txt b/notes.txt\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+first\n+appended\n')
        } finally {
          await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
        }
      })
    })
  }
})
