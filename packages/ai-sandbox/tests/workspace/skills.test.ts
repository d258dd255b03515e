import { describe, expect, it } from 'vitest'
import { agentSkill, bearer, createSecrets, defineWorkspace, fileSkill, gitSkill, mcpSkill, SandboxConfigError, UnknownSecretError } from '../../src/index.js'

describe('skill factories', () => {
  const secrets = createSecrets({ GH: 'gh-token-value', MCP: 'mcp-token-value' })

  it('derive names and URLs', () => {
    expect(gitSkill({ repo: 'acme/agent-skills' })).toMatchObject({ kind: 'git', name: 'agent-skills', url: 'https://github.com/acme/agent-skills.git' })
    expect(gitSkill({ repo: 'file:///srv/git/skills.git', into: '/opt/skills' })).toMatchObject({ name: 'skills', into: '/opt/skills' })
    expect(mcpSkill('issues', { url: 'https://mcp.example.com/mcp', headers: { Authorization: bearer(secrets.MCP) } })).toMatchObject({ transport: 'http' })
    expect(mcpSkill('fs', { command: 'npx', args: ['server'] })).toMatchObject({ transport: 'stdio', args: ['server'], env: {} })
    expect(agentSkill('notes', { description: 'Notes' })).toEqual({ kind: 'agent', name: 'notes', description: 'Notes' })
    expect(fileSkill({ path: '.hints.md', content: 'x' })).toEqual({ kind: 'file', path: '.hints.md', content: 'x' })
  })

  it('refuse bad input, naming the field', () => {
    const field = (fn: () => unknown) => {
      try {
        fn()
      } catch (error) {
        return (error as SandboxConfigError).field
      }
      return undefined
    }
    expect(field(() => agentSkill('has space'))).toBe('agentSkill.name')
    expect(field(() => gitSkill({ repo: 'acme/x', into: 'relative/path' }))).toBe('gitSkill.into')
    expect(field(() => mcpSkill('m', { url: 'ftp://x' } as never))).toMatch(/^mcpSkill\.server/)
    expect(field(() => fileSkill({ path: '../escape', content: '' }))).toBe('fileSkill.path')
    expect(field(() => defineWorkspace({ skills: [{ kind: 'nope' } as never] }))).toBe('workspace.skills.0')
  })

  it('require the secrets a skill uses to be workspace secrets', () => {
    const other = createSecrets({ X: 'x-value' })
    expect(() => defineWorkspace({ secrets, skills: [mcpSkill('m', { url: 'https://h/mcp', headers: { Authorization: bearer(other.X) } })] })).toThrow(UnknownSecretError)
    expect(() => defineWorkspace({ secrets, skills: [gitSkill({ repo: 'acme/x', secret: other.X })] })).toThrow(/workspace.skills.0/)
    const ok = defineWorkspace({ secrets, skills: [gitSkill({ repo: 'acme/x', secret: secrets.GH })], instructions: 'Be brief.' })
    expect(JSON.stringify(ok)).not.toContain('gh-token-value')
  })

  it('change the workspace hash', () => {
    const a = defineWorkspace({ skills: [agentSkill('a')] })
    const b = defineWorkspace({ skills: [agentSkill('b')] })
    expect(a.hash).not.toBe(b.hash)
    expect(defineWorkspace({ instructions: 'x' }).hash).not.toBe(defineWorkspace({ instructions: 'y' }).hash)
  })
})
