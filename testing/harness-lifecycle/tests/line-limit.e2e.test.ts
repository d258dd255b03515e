/**
 * The line bound of the shared run loop, through chat() + withSandbox on the
 * local-process provider: a CLI that prints one line without a newline,
 * longer than `maxLineBytes` (or than DEFAULT_MAX_LINE_BYTES when the adapter
 * sets none), ends the run with RUN_ERROR `line_too_long` naming the bound,
 * and its process is stopped. Every adapter, Grok Build's ACP transport too.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { ModelMessage } from '@tanstack/ai'
import { DEFAULT_MAX_LINE_BYTES } from '@tanstack/ai-sandbox'
import { ALL_HARNESSES, CODEX, newTag, processesOf, runBounded, waitFor, type Harness } from './helpers/harnesses.js'
import { localSuite } from './helpers/local-sandboxes.js'

const suite = localSuite('lifecycle-line-limit')
const bin = mkdtempSync(join(tmpdir(), 'lifecycle-line-limit-bin-'))
afterAll(() => rmSync(bin, { recursive: true, force: true }))
const user = (content: string): ModelMessage => ({ role: 'user', content })

/** A fake CLI that prints `bytes` of `a` with no newline, then lingers (so only the run loop can stop it). */
function longLineCli(bytes: number): string {
  const path = join(bin, `long-line-${bytes}`)
  writeFileSync(path, `#!/bin/sh\nhead -c ${bytes} /dev/zero | tr '\\0' a\nsleep 60\n`)
  chmodSync(path, 0o755)
  return path
}

function adapterFor(harness: Harness, bytes: number, maxLineBytes?: number) {
  const { tag, env } = newTag()
  const extra = harness.name === 'grok-build' ? { XAI_API_KEY: 'xai-test-key-not-a-secret' } : {}
  return { tag, adapter: harness.adapter({ executable: longLineCli(bytes), env: { ...env, ...extra }, ...(maxLineBytes !== undefined ? { maxLineBytes } : {}) } as never) }
}

describe('a CLI line longer than the bound', () => {
  it.each(ALL_HARNESSES.map((h) => [h.name, h] as const))('%s: maxLineBytes ends the run with RUN_ERROR line_too_long and stops the CLI', async (_, harness) => {
    const { sandbox, threadId } = suite.sandbox(`lc-line-${harness.name}`)
    const { tag, adapter } = adapterFor(harness, 4 * 1024 * 1024, 1024 * 1024)
    const out = await runBounded(harness, { adapter, sandbox, threadId, messages: [user('Say hello')] })
    expect(out.error?.code).toBe('line_too_long')
    expect(out.error?.message).toMatch(/1048576 bytes/)
    expect(out.error?.message).toMatch(/maxLineBytes/)
    expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
  })

  it('codex: without maxLineBytes the default bound applies', async () => {
    const { sandbox, threadId } = suite.sandbox('lc-line-default')
    const { tag, adapter } = adapterFor(CODEX, DEFAULT_MAX_LINE_BYTES + 1024 * 1024)
    const out = await runBounded(CODEX, { adapter, sandbox, threadId, messages: [user('Say hello')] })
    expect(out.error?.code).toBe('line_too_long')
    expect(out.error?.message).toContain(String(DEFAULT_MAX_LINE_BYTES))
    expect(await waitFor(() => processesOf(tag).length === 0)).toBe(true)
  })

  it('refuses a maxLineBytes below 1024 with a config error naming the field', () => {
    expect(() => CODEX.adapter({ executable: '/bin/true', env: {}, maxLineBytes: 10 } as never)).toThrow(/maxLineBytes/)
  })
})
