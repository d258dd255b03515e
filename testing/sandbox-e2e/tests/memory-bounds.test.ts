/**
 * Memory bounds of a chat() run's file events over the real local-process
 * provider: an agent that plants a 2 GB sparse file (`truncate -s 2G`) and a
 * FIFO gets them reported in `file.changed` without their content
 * (`tooLarge` with the size, `notRegular`), the other files keep their diffs,
 * a hook's `after()` refuses the big file with SandboxLimitError instead of
 * reading it, and the run completes. Host memory is measured in `pnpm bench`.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { DEFAULT_MAX_DIFF_FILE_BYTES, defineSandbox, defineWorkspace, FILE_CHANGED_EVENT, SandboxLimitError, withSandbox, type SandboxHandle } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('memory-bounds')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

type Custom = { type: 'CUSTOM'; name: string; value: any }
const changes = (chunks: StreamChunk[]) => (chunks as unknown as Custom[]).filter((c) => c.type === 'CUSTOM' && c.name === FILE_CHANGED_EVENT).map((c) => c.value)
const GIB2 = 2 * 1024 * 1024 * 1024

describe('file events of a run that writes a 2 GB sparse file and a FIFO', () => {
  for (const [label, setup] of [
    ['a plain folder', ['echo keep > keep.txt']],
    ['a git repository', ['git init -q', 'echo keep > keep.txt', 'git add keep.txt', 'git -c user.name=t -c user.email=t@t.invalid commit -qm init']],
  ] as const) {
    it(`reports them without content in ${label}, and the run completes`, async () => {
      const handles: SandboxHandle[] = []
      const afterErrors: unknown[] = []
      const sandbox = defineSandbox({
        id: `mb-${label.replace(/\W+/g, '-')}`,
        provider,
        lifecycle: { reuse: 'none' },
        workspace: defineWorkspace({ setup: [...setup] }),
        hooks: {
          onReady: (handle) => void handles.push(handle),
          onFile: async (event) => {
            if (!event.path.endsWith('/big.log')) return
            await event.after().then(
              () => afterErrors.push('read'),
              (error: unknown) => afterErrors.push(error),
            )
          },
        },
      })
      const out = await runShell({
        command: 'truncate -s 2G big.log && mkfifo pipe && printf "small\\n" > small.txt && echo done',
        threadId: `t-mb-${label}`,
        middleware: [withSandbox(sandbox)],
      })
      expect(out.error).toBeUndefined()
      expect(out.text).toContain('done')
      const root = handles[0]!.workspaceRoot
      const byPath = Object.fromEntries(changes(out.chunks).map((value) => [value.path.slice(root.length + 1), value]))
      expect(byPath['big.log']).toMatchObject({ tooLarge: true, size: GIB2 })
      expect(byPath['big.log'].diff).toMatch(/too large to diff \(2147483648 bytes/)
      expect(byPath['big.log'].diff.length).toBeLessThan(300)
      expect(byPath['pipe']).toMatchObject({ notRegular: true })
      expect(byPath['small.txt'].diff).toContain('+small')
      expect(byPath['small.txt'].tooLarge).toBeUndefined()
      expect(afterErrors).toHaveLength(1)
      expect(SandboxLimitError.isInstance(afterErrors[0])).toBe(true)
      expect((afterErrors[0] as SandboxLimitError).reason).toBe('file-too-large')
      expect((afterErrors[0] as SandboxLimitError).limitBytes).toBe(DEFAULT_MAX_DIFF_FILE_BYTES)
    })
  }
})
