/**
 * Two concurrent chat() runs of one thread (issue 16): withSandbox runs them
 * one after the other on the thread's sandbox, so each run's `sandbox.file`
 * and `file.changed` events are its own work only. An aborted waiting run
 * stops waiting, and the next one still gets its turn. Over the real
 * local-process provider with the shell adapter.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { StreamChunk } from '@tanstack/ai'
import { defineSandbox, withSandbox } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { runShell } from '@testing/support/run-shell'
import { makeRoot } from './helpers/run-chat.js'

const tmp = makeRoot('concurrent-runs')
const provider = localProcessSandbox({ root: tmp.root })

afterAll(() => {
  const left = tmp.entries()
  tmp.cleanup()
  expect(left, 'every sandbox directory is removed by the tests').toEqual([])
})

/** The paths a run's file events name (live `sandbox.file` and the final `file.changed`). */
function paths(chunks: StreamChunk[], name: string): string[] {
  return chunks.filter((c) => c.type === 'CUSTOM' && c.name === name).map((c) => ((c as { value?: unknown }).value as { path: string }).path.split('/').at(-1)!)
}

describe('concurrent runs of one thread', () => {
  it('take turns: each run sees only its own files in sandbox.file and file.changed', async () => {
    const sandbox = defineSandbox({ id: 'e2e-concurrent-turns', provider })
    const first = runShell({ command: 'echo one > first.txt; sleep 1; echo two >> first.txt; echo first-done', threadId: 't-turns', middleware: [withSandbox(sandbox)] })
    await new Promise((resolve) => setTimeout(resolve, 200))
    const second = runShell({ command: 'test -f first.txt && grep -q two first.txt && echo saw-the-whole-first-run; echo b > second.txt', threadId: 't-turns', middleware: [withSandbox(sandbox)] })
    const [a, b] = await Promise.all([first, second])

    expect(a.error).toBeUndefined()
    expect(b.error).toBeUndefined()
    expect(b.text, 'the second run started after the first one ended').toContain('saw-the-whole-first-run')
    expect(paths(a.chunks, 'file.changed')).toEqual(['first.txt'])
    expect(paths(b.chunks, 'file.changed')).toEqual(['second.txt'])
    expect(paths(a.chunks, 'sandbox.file')).not.toContain('second.txt')
    expect(paths(b.chunks, 'sandbox.file')).not.toContain('first.txt')
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-turns', runId: '' }) })
  })

  it('a waiting run that is aborted stops waiting, and the run after it still gets its turn', async () => {
    const sandbox = defineSandbox({ id: 'e2e-concurrent-abort', provider })
    const first = runShell({ command: 'sleep 1; echo first-done', threadId: 't-abort-wait', middleware: [withSandbox(sandbox)] })
    await new Promise((resolve) => setTimeout(resolve, 200))
    const controller = new AbortController()
    const waiting = runShell({ command: 'echo never', threadId: 't-abort-wait', middleware: [withSandbox(sandbox)], abortController: controller }).catch((error: unknown) => ({ text: '', chunks: [], error: String(error) }))
    const third = runShell({ command: 'echo third-done', threadId: 't-abort-wait', middleware: [withSandbox(sandbox)] })
    await new Promise((resolve) => setTimeout(resolve, 100))
    controller.abort()
    const [a, w, c] = await Promise.all([first, waiting, third])
    expect(a.text).toContain('first-done')
    expect(w.text).not.toContain('never')
    expect(c.error).toBeUndefined()
    expect(c.text).toContain('third-done')
    await sandbox.destroy({ key: sandbox.key({ threadId: 't-abort-wait', runId: '' }) })
  })
})
