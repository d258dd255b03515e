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

  it('turns command globs into Bash rules', () => {
    const flags = claudePolicyFlags(defineSandboxPolicy({ default: 'deny', commands: { allow: ['git status', 'npm test *'], deny: ['rm -rf *'] } }))
    expect(flags.allowedTools).toEqual(['Bash(git status)', 'Bash(npm test *)'])
    expect(flags.disallowedTools).toEqual(['Bash(rm -rf *)'])
  })

  it('denies `ask` rules, since a headless run has nobody to ask (even under bypassPermissions)', () => {
    const flags = claudePolicyFlags(defineSandboxPolicy({ default: 'allow', commands: { ask: ['git push *'] } }))
    expect(flags.permissionMode).toBe('bypassPermissions')
    expect(flags.disallowedTools).toEqual(['Bash(git push *)'])
  })

  it('closes the file-write and network gates by disallowing those tools', () => {
    const flags = claudePolicyFlags(defineSandboxPolicy({ capabilities: { fileWrite: false, network: false } }))
    expect(flags.disallowedTools).toEqual(['Edit', 'Write', 'NotebookEdit', 'WebFetch', 'WebSearch'])
  })
})
