/**
 * The sandbox policy enforced by the real claude CLI: a command the policy
 * denies is refused by the CLI itself (not by us), the tool result says so,
 * and the run reports the denial in a `claude-code.permission-denials` event;
 * `script:<name>` rules reach the CLI as the script's own command, so a
 * deny-by-default policy lets the agent run an allowed script and a deny rule
 * on a script stops it.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { CLAUDE_CODE_PERMISSION_DENIALS_EVENT, claudeCodeText } from '@tanstack/ai-claude-code'
import { defineSandbox, defineSandboxPolicy, defineWorkspace, type SandboxHandle, type SandboxPolicyInput } from '@tanstack/ai-sandbox'
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

  /** One run where the model asks for `touch marked.txt`, the command of the workspace script `mark`. */
  async function runMarkScript(policy: SandboxPolicyInput, threadId: string) {
    const model = await startFakeModel(join(fixtures, 'policy-script.json'))
    const home = makeClaudeHome('claude-policy-home')
    let handle: SandboxHandle | undefined
    // Kept for the thread so the test can look into the workspace after the run, then destroyed.
    const sandbox = defineSandbox({
      id: 'cc-policy-script',
      provider: localProcessSandbox({ root }),
      workspace: defineWorkspace({ scripts: { mark: 'touch marked.txt' } }),
      policy: defineSandboxPolicy(policy),
      hooks: { onReady: (ready) => void (handle = ready) },
    })
    try {
      const out = await runClaude({ adapter: claudeCodeText('sonnet', { executable: claudeBinary(), env: home.env(model.url) }), sandbox, threadId, messages: [{ role: 'user', content: 'Run the mark script' }] })
      return { out, marked: await handle!.fs.exists('marked.txt') }
    } finally {
      await sandbox.destroy({ key: sandbox.key({ threadId, runId: '' }) })
      await model.stop()
      home.cleanup()
    }
  }

  it('lets a deny-by-default run use a script that script:<name> allows', async () => {
    const { out, marked } = await runMarkScript({ default: 'deny', commands: { allow: ['script:mark'] } }, 't-policy-script-allow')
    expect(out.error).toBeUndefined()
    expect(ofType(out.chunks, 'CUSTOM').filter((c) => c.name === CLAUDE_CODE_PERMISSION_DENIALS_EVENT)).toEqual([])
    expect(marked, 'the script command ran').toBe(true)
  })

  it('stops a script that script:<name> denies, even under default allow', async () => {
    const { out, marked } = await runMarkScript({ default: 'allow', commands: { deny: ['script:mark'] } }, 't-policy-script-deny')
    expect(out.error).toBeUndefined()
    const [result] = ofType(out.chunks, 'TOOL_CALL_RESULT')
    expect(String(result?.content)).toMatch(/permission|denied|not allowed/i)
    expect(marked, 'the script command did not run').toBe(false)
  })
})
