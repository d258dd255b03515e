/**
 * Portable snapshots with the real `claude` CLI (spec 000 "Portable sandbox
 * snapshots" and "Critical rules"), over local-process against aimock: the
 * agent writes a file with its Write tool; the run's checkpoint holds it (the
 * workspace secret it contains zeroed) and none of what the harness projected
 * (CLAUDE.md, the skill's folder), and the turn's whole transcript; the next
 * run's new private sandbox gets the file back before the CLI starts, and the
 * agent's Read tool sees it. Afterwards no sandbox directory, HOME or process
 * of ours is left.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { claudeCodeText } from '@tanstack/ai-claude-code'
import { agentSkill, createSecrets, defineSandbox, defineWorkspace, memorySandboxSnapshots, withSandbox } from '@tanstack/ai-sandbox'
import { withPersistence } from '@tanstack/ai-sandbox/persistence'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { claudeBinary, makeClaudeHome, startFakeModel } from '../src/aimock.js'
import { ofType, processesWithHome, runClaude } from './helpers/run-claude.js'

const fixtures = fileURLToPath(new URL('../fixtures/', import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'claude-code-snapshots-'))
const TOKEN = 'tok-snapshot-e2e-5f1d2c'

afterAll(() => {
  const left = readdirSync(root)
  rmSync(root, { recursive: true, force: true })
  expect(left, 'every sandbox directory is removed').toEqual([])
})

it('a file the agent wrote comes back in the next run\'s new sandbox; projected files and the secret are not stored', async () => {
  const model = await startFakeModel(join(fixtures, 'snapshots.json'), { vars: { TOKEN } })
  const home = makeClaudeHome('claude-code-snapshots-home')
  try {
    const sandbox = defineSandbox({
      id: 'cc-snapshots',
      provider: localProcessSandbox({ root }),
      lifecycle: { reuse: 'none' },
      workspace: defineWorkspace({
        instructions: 'Keep plans in docs/.',
        skills: [agentSkill('planning', { description: 'How to write a plan', content: '# Planning\nNumber the steps.\n' })],
        secrets: createSecrets({ PLAN_TOKEN: TOKEN }),
      }),
    })
    const snapshots = await memorySandboxSnapshots({ sandbox })
    const middleware = [withPersistence(snapshots.persistence), withSandbox(sandbox, { snapshots })]
    const adapter = claudeCodeText('sonnet', { executable: claudeBinary(), env: home.env(model.url) })

    const first = await runClaude({ adapter, sandbox, threadId: 't-cc-snap', messages: [{ role: 'user', content: 'Write the plan' }], middleware })
    expect(first.error).toBeUndefined()
    const checkpoint = await snapshots.latest('t-cc-snap')
    // The projected skill folder is not stored (its parent stays, as an empty folder); CLAUDE.md is not stored.
    expect(checkpoint?.manifest.entries.map((entry) => [entry.path, entry.type]), "only the workspace's own files: not CLAUDE.md or .claude/skills/planning").toEqual([
      ['.claude/skills', 'directory'],
      ['AGENTS.md', 'file'],
      ['docs/plan.md', 'file'],
    ])
    const plan = checkpoint!.manifest.entries.find((entry) => entry.path === 'docs/plan.md') as { sha256: string }
    const stored = Buffer.from((await snapshots.persistence.stores.blobs.get(plan.sha256))!).toString('latin1')
    expect(stored, 'the workspace secret the agent wrote is zeroed in the stored blob').toBe(`1. restore before projection\n2. token ${'\0'.repeat(TOKEN.length)} stays out\n`)
    expect(readdirSync(root), "reuse 'none' destroyed the first sandbox").toEqual([])

    const second = await runClaude({ adapter, sandbox, threadId: 't-cc-snap', messages: [{ role: 'user', content: 'Read the plan' }], middleware })
    expect(second.error).toBeUndefined()
    const read = ofType(second.chunks, 'TOOL_CALL_RESULT').find((chunk) => chunk.toolCallId === 'toolu_snap_read')
    expect(read?.content, 'the agent reads the restored file in its new sandbox').toContain('1. restore before projection')
    expect(second.text).toBe('The plan is restored.')
    // Each turn is stored whole: the user message, the assistant's tool call, its result, the reply.
    expect((await snapshots.list('t-cc-snap')).map((c) => [c.sequence, c.messageCount])).toEqual([
      [1, 4],
      [2, 8],
    ])
    expect((await snapshots.persistence.stores.messages.list('t-cc-snap')).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'tool', 'assistant'])
  } finally {
    await model.stop()
    home.cleanup()
    expect(processesWithHome(home.dir), 'no CLI process of this test is left').toEqual([])
  }
})
