/**
 * The file-event cases every provider without a native watcher shares (the
 * portable find + stat poll): watchWorkspace on its own, a chat() run's
 * sandbox.file chunks and file.changed diffs, and a later run of a thread.
 * With `git`, the workspace is a repository and diffs are git's; without,
 * they are add-patches of the whole file. Registers the cases in the current
 * describe; the caller owns its provider's cleanup check. Shared by the
 * Docker and Daytona suites (testing/sandbox-e2e) and the Cloudflare one
 * (packages/ai-sandbox-cloudflare).
 */
import { expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { defineSandbox, defineWorkspace, FILE_CHANGED_EVENT, SANDBOX_FILE_EVENT, watchWorkspace, withSandbox, type SandboxProvider } from '@tanstack/ai-sandbox'
import { eventLog, perPath } from './event-log.js'
import { runShell } from './run-shell.js'

type Custom = { type: 'CUSTOM'; name: string; value: any }
const customs = (chunks: StreamChunk[], name: string) => (chunks as unknown as Custom[]).filter((c) => c.type === 'CUSTOM' && c.name === name).map((c) => c.value)

/**
 * @param slug - Unique per call; names the sandbox definitions and threads.
 * @param provider - Gives a fresh sandbox per case.
 * @param git - Whether the sandbox has git (the workspace is then a repository).
 * @param root - The provider's workspaceRoot, which event paths start with.
 */
export function pollFileEventCases(slug: string, provider: SandboxProvider, git: boolean, root = '/workspace'): void {
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
      expect(perPath(log.events)).toEqual({ [`${root}/kept.txt`]: 'change', [`${root}/deep/er/a file's.txt`]: 'create', [`${root}/gone.txt`]: 'delete' })

      await handle.process.exec('rm -r deep')
      await watcher.flush()
      await watcher.stop()
      expect(perPath(log.events)[`${root}/deep/er/a file's.txt`]).toBe('create,delete')
      expect(log.events.at(-1)).toMatchObject({ type: 'delete', path: `${root}/deep/er/a file's.txt` })
    } finally {
      await handle.destroy()
    }
  })

  it('a chat() run streams sandbox.file chunks and a file.changed diff', async () => {
    const sandbox = defineSandbox({
      id: `fe-${slug}`,
      provider,
      lifecycle: { reuse: 'none', snapshot: 'none' },
      workspace: defineWorkspace({ setup: git ? ['git init -q', 'printf "a\\nb\\n" > notes.txt', 'git add -A', 'git -c user.name=t -c user.email=t@t.invalid commit -qm base'] : ['printf "a\\nb\\n" > notes.txt'] }),
    })
    const out = await runShell({ command: 'printf "a\\nB\\n" > notes.txt && echo new > added.txt && echo ok', threadId: `t-fe-${slug}`, middleware: [withSandbox(sandbox)] })
    expect(out.error).toBeUndefined()
    expect(customs(out.chunks, SANDBOX_FILE_EVENT).map((v) => `${v.type} ${v.path}`).sort()).toEqual([`change ${root}/notes.txt`, `create ${root}/added.txt`])
    const changed = customs(out.chunks, FILE_CHANGED_EVENT)
    expect(changed.map((c) => c.path)).toEqual([`${root}/added.txt`, `${root}/notes.txt`])
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
      id: `fe-thread-${slug}`,
      provider,
      lifecycle: { snapshot: 'none' },
      workspace: defineWorkspace({ setup: git ? ['git init -q', 'echo base > tracked.txt', 'git add -A', 'git -c user.name=t -c user.email=t@t.invalid commit -qm base'] : [] }),
    })
    const threadId = `t-fe-thread-${slug}`
    try {
      const first = await runShell({ command: 'echo first > notes.txt && echo other > other.txt && echo ok', threadId, middleware: [withSandbox(sandbox)] })
      const second = await runShell({ command: 'echo appended >> notes.txt && echo ok', threadId, middleware: [withSandbox(sandbox)] })
      expect(first.error).toBeUndefined()
      expect(second.error).toBeUndefined()
      const changed = customs(second.chunks, FILE_CHANGED_EVENT)
      expect(changed.map((c) => c.path), 'other.txt was not touched in run 2').toEqual([`${root}/notes.txt`])
      if (git) expect(changed[0].diff).toMatch(/--- a\/notes\.txt\n\+\+\+ b\/notes\.txt\n@@ -1 \+1,2 @@\n first\n\+appended\n$/)
      else expect(changed[0].diff, 'no git in the image: nothing recorded the start').toBe('diff --git a/notes.txt b/notes.txt\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+first\n+appended\n')
    } finally {
      await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
    }
  })
}
