/**
 * The sandbox policy mapped onto Claude Code's permission flags.
 */
import { describe, expect, it } from 'vitest'
import { defineSandboxPolicy } from '@tanstack/ai-sandbox'
import { claudePolicyFlags } from '../src/index.js'

describe('claudePolicyFlags', () => {
  it('maps the default verdict to a permission mode', () => {
    expect(claudePolicyFlags(defineSandboxPolicy({ default: 'allow' }))).toEqual({ permissionMode: 'bypassPermissions', allowedTools: [], disallowedTools: [] })
    expect(claudePolicyFlags(defineSandboxPolicy({ default: 'ask' })).permissionMode).toBe('manual')
    expect(claudePolicyFlags(defineSandboxPolicy({ default: 'deny' })).permissionMode).toBe('dontAsk')
    expect(claudePolicyFlags(defineSandboxPolicy()).permissionMode).toBe('bypassPermissions')
  })

  it('turns commands into Bash rules, passes tools through and expands paths to Edit, Write and Read', () => {
    const flags = claudePolicyFlags(
      defineSandboxPolicy({
        default: 'deny',
        commands: { allow: ['git status', 'npm test *'], deny: ['rm -rf *'] },
        tools: { allow: ['WebFetch'], deny: ['WebSearch'] },
        paths: { allow: ['src/**'], deny: ['.env'] },
      }),
    )
    expect(flags.allowedTools).toEqual(['Bash(git status)', 'Bash(npm test *)', 'WebFetch', 'Edit(src/**)', 'Write(src/**)', 'Read(src/**)'])
    expect(flags.disallowedTools).toEqual(['Bash(rm -rf *)', 'WebSearch', 'Edit(.env)', 'Write(.env)', 'Read(.env)'])
  })

  it('denies `ask` rules, since a headless run has nobody to ask (even under bypassPermissions)', () => {
    const flags = claudePolicyFlags(defineSandboxPolicy({ default: 'allow', commands: { ask: ['git push *'] }, tools: { ask: ['WebFetch'] }, paths: { ask: ['secrets/**'] } }))
    expect(flags.permissionMode).toBe('bypassPermissions')
    expect(flags.allowedTools).toEqual([])
    expect(flags.disallowedTools).toEqual(['Bash(git push *)', 'WebFetch', 'Edit(secrets/**)', 'Write(secrets/**)', 'Read(secrets/**)'])
  })
})
