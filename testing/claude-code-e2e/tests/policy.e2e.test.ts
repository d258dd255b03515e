/**
 * The sandbox policy enforced by the real claude CLI: a command the policy
 * denies is refused by the CLI itself (not by us), the tool result says so,
 * and the run reports the denial in a `claude-code.permission-denials` event.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { CLAUDE_CODE_PERMISSION_DENIALS_EVENT, claudeCodeText } from '@tanstack/ai-claude-code'
import { defineSandbox, defineSandboxPolicy, defineWorkspace } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, makeClaudeHome, startFakeModel } from '../src/aimock.js'
import { ofType, runClaude } from './helpers/run-claude.js'

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'claude-policy-e2e-'))

afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'no sandbox is left').toEqual([])
})

describe('policy enforced by the claude CLI', () => {
  it('refuses a denied command and reports the denial', async () => {
    const model = await startFakeModel(join(fixtures, 'policy.json'))
    const home = makeClaudeHome('claude-policy-home')
    try {
      const sandbox = defineSandbox({
        id: 'cc-policy',
        provider: localProcessSandbox({ root }),
        workspace: defineWorkspace({ setup: ['git init -q'] }),
        policy: defineSandboxPolicy({ default: 'allow', commands: { deny: ['git push *'] } }),
        lifecycle: { reuse: 'none' },
      })
      const out = await runClaude({
        adapter: claudeCodeText('sonnet', { executable: claudeBinary(), env: home.env(model.url) }),
        sandbox,
        threadId: 't-policy',
        messages: [{ role: 'user', content: 'Push the branch' }],
      })
      expect(out.error).toBeUndefined()
      const [start] = ofType(out.chunks, 'TOOL_CALL_START')
      expect(start?.toolCallName).toBe('Bash')
      const [result] = ofType(out.chunks, 'TOOL_CALL_RESULT')
      expect(String(result?.content)).toMatch(/permission|denied|not allowed/i)
      const [denials] = ofType(out.chunks, 'CUSTOM').filter((c) => c.name === CLAUDE_CODE_PERMISSION_DENIALS_EVENT)
      expect(denials?.value.denials).toEqual([expect.objectContaining({ toolName: 'Bash', toolUseId: 'toolu_policy_1_push', input: expect.objectContaining({ command: 'git push origin main' }) })])
      expect(out.text).toContain('refused by policy')
    } finally {
      await model.stop()
      home.cleanup()
    }
  })
})
