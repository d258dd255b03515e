/**
 * The adapter's guards, with stand-in CLIs: secret values never reach a
 * RUN_ERROR or the debug log, `timeoutMs` stops a CLI that hangs without
 * output, and bad options fail when the adapter is created.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { createSecrets, defineSandbox, defineWorkspace, SandboxConfigError } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { processesMatching, runClaude, waitFor } from './helpers/run-claude.js'

const fakeBin = fileURLToPath(new URL('./fixtures/bin/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'claude-guards-e2e-'))
const provider = localProcessSandbox({ root })

afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left).toEqual([])
})

describe('adapter guards', () => {
  it('redacts workspace secrets from RUN_ERROR and from the debug log', async () => {
    const key = 'sk-ant-very-secret-key-0123456789'
    const sandbox = defineSandbox({ id: 'cc-redact', provider, workspace: defineWorkspace({ secrets: createSecrets({ ANTHROPIC_API_KEY: key }) }), lifecycle: { reuse: 'none' } })
    const lines: string[] = []
    const logger = { debug: (m: string, meta?: unknown) => lines.push(m, JSON.stringify(meta ?? null)), info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) }
    const out = await runClaude({ adapter: claudeCodeText('sonnet', { executable: join(fakeBin, 'claude-leaks-key') }), sandbox, threadId: 't-redact', messages: [{ role: 'user', content: 'hi' }], debug: { logger } })
    expect(out.error?.message).toContain('auth failed for key [secret ANTHROPIC_API_KEY]')
    expect(JSON.stringify(out.chunks)).not.toContain(key)
    expect(lines.join('\n')).toContain('[secret ANTHROPIC_API_KEY]')
    expect(lines.join('\n')).not.toContain(key)
  })

  it('stops a CLI that hangs without output after timeoutMs', async () => {
    const sandbox = defineSandbox({ id: 'cc-timeout', provider, lifecycle: { reuse: 'none' } })
    const out = await runClaude({ adapter: claudeCodeText('sonnet', { executable: join(fakeBin, 'claude-hangs'), timeoutMs: 500 }), sandbox, threadId: 't-timeout', messages: [{ role: 'user', content: 'hi' }] })
    expect(out.chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'timeout' })
    expect(await waitFor(() => processesMatching('claude-hangs').length === 0), 'the hung CLI is gone').toBe(true)
  })

  it('ends with no_prompt when the latest user message is empty, even with history', async () => {
    const sandbox = defineSandbox({ id: 'cc-empty', provider, lifecycle: { reuse: 'none' } })
    const out = await runClaude({
      adapter: claudeCodeText('sonnet', { executable: join(fakeBin, 'claude-hangs') }),
      sandbox,
      threadId: 't-empty',
      messages: [{ role: 'user', content: 'earlier' }, { role: 'assistant', content: 'answer' }, { role: 'user', content: '   ' }],
    })
    expect(out.chunks.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'no_prompt' })
  })

  it('refuses a cwd outside the workspace and non-string env values when created', () => {
    expect(() => claudeCodeText('sonnet', { cwd: '../..' })).toThrow(SandboxConfigError)
    expect(() => claudeCodeText('sonnet', { cwd: '/etc' })).toThrow(/inside the workspace/)
    expect(() => claudeCodeText('sonnet', { env: { OK: 5 as never } })).toThrow(/claudeCodeText.options.env.OK/)
    expect(() => claudeCodeText('sonnet', { timeoutMs: -1 })).toThrow(/timeoutMs/)
    expect(() => claudeCodeText('sonnet', { cwd: '/workspace/sub' })).not.toThrow()
  })
})
