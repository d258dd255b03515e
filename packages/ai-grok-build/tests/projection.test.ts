/** Skills into `.grok/skills`, MCP servers into ACP's `McpServer` list, plugins skipped with a warning. */
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { agentSkill, bearer, createSecrets, defineWorkspace, fileSkill, gitSkill, mcpSkill, projectWorkspace } from '@tanstack/ai-sandbox'
import { localProcessSandbox } from '@tanstack/ai-sandbox-local-process'
import { grokBuildProjection, grokMcpServers } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'grok-projection-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('grokMcpServers', () => {
  const secrets = createSecrets({ TOKEN: 'sekret-value' })
  const workspace = defineWorkspace({
    secrets,
    skills: [mcpSkill('issues', { url: 'https://mcp.example/issues', headers: { Authorization: bearer(secrets.TOKEN) } }), mcpSkill('files', { command: 'mcp-files', args: ['--root', '.'], env: { KEY: secrets.TOKEN, MODE: 'ro' } }), agentSkill('lint')],
  })

  it('resolves secrets into ACP McpServer entries', () => {
    expect(grokMcpServers(workspace, { http: true }, () => undefined)).toEqual([
      { type: 'http', name: 'issues', url: 'https://mcp.example/issues', headers: [{ name: 'Authorization', value: 'Bearer sekret-value' }] },
      { name: 'files', command: 'mcp-files', args: ['--root', '.'], env: [{ name: 'KEY', value: 'sekret-value' }, { name: 'MODE', value: 'ro' }] },
    ])
  })

  it('skips HTTP servers with a warning when the agent cannot take them', () => {
    const warnings: string[] = []
    expect(grokMcpServers(workspace, { http: false }, (m) => warnings.push(m)).map((s) => s.name)).toEqual(['files'])
    expect(warnings).toEqual([expect.stringContaining('MCP server "issues" skipped')])
  })
})

describe('grokBuildProjection', () => {
  it('writes agent skills, links git skills, skips plugins with a warning', async () => {
    const handle = await localProcessSandbox({ root }).create()
    try {
      const cloneInto = join(handle.workspaceRoot, '.tanstack-skills', 'team')
      // What bootstrap's clone of the skills repository leaves behind.
      mkdirSync(join(cloneInto, 'skills', 'deploy'), { recursive: true })
      writeFileSync(join(cloneInto, 'skills', 'deploy', 'SKILL.md'), '---\nname: deploy\n---\n')
      const workspace = defineWorkspace({ skills: [agentSkill('lint', { description: 'Lint the code', content: 'Run pnpm lint.' }), gitSkill({ repo: 'https://example.com/team.git', into: cloneInto }), fileSkill({ path: 'notes.md', content: 'x' })], plugins: ['plugins/x'] })
      const warnings: string[] = []
      const { args } = await projectWorkspace(handle, workspace, grokBuildProjection, (m) => warnings.push(m))
      expect(args).toEqual([])
      expect(readFileSync(join(handle.workspaceRoot, '.grok/skills/lint/SKILL.md'), 'utf8')).toBe('---\nname: lint\ndescription: "Lint the code"\n---\n\nRun pnpm lint.\n')
      expect(readlinkSync(join(handle.workspaceRoot, '.grok/skills/deploy'))).toBe(join(cloneInto, 'skills', 'deploy'))
      expect(warnings).toEqual([expect.stringContaining('[grok-build] plugin "plugins/x" skipped')])
    } finally {
      await handle.destroy()
    }
  })
})
