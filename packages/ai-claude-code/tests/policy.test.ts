/**
 * The sandbox policy mapped onto Claude Code's permission flags.
 */
import { describe, expect, it, vi } from 'vitest'
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

  it('expands script rules to the script\'s command and the package-manager forms that run it', () => {
    const warn = vi.fn()
    const flags = claudePolicyFlags(defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:test'], deny: ['script:publish'] } }), { scripts: { test: 'vitest run', publish: 'node publish.js' }, warn })
    expect(flags.allowedTools).toEqual(['Bash(vitest run)', 'Bash(npm run test)', 'Bash(npm test)', 'Bash(pnpm run test)', 'Bash(pnpm test)', 'Bash(yarn run test)', 'Bash(yarn test)', 'Bash(bun run test)'])
    expect(flags.disallowedTools).toEqual(['Bash(node publish.js)', 'Bash(npm run publish)', 'Bash(pnpm run publish)', 'Bash(yarn run publish)', 'Bash(bun run publish)'])
    expect(flags.allowedTools.join(' ')).not.toContain('script:')
    expect(warn).not.toHaveBeenCalled()
  })

  it('leaves out a rule naming no workspace script, with one warning per mapping naming the rules', () => {
    const warn = vi.fn()
    const flags = claudePolicyFlags(defineSandboxPolicy({ commands: { allow: ['script:deploy', 'git status'], ask: ['script:release'] } }), { scripts: { test: 'vitest run' }, warn })
    expect(flags.allowedTools).toEqual(['Bash(git status)'])
    expect(flags.disallowedTools).toEqual([])
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]![0]).toMatch(/commands\.allow "script:deploy", commands\.ask "script:release" name no workspace script \(the workspace has test\)/)
  })

  it('warns on console by default, and when no scripts are given at all', () => {
    const spy = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      expect(claudePolicyFlags(defineSandboxPolicy({ commands: { deny: ['script:test'] } })).disallowedTools).toEqual([])
      expect(spy).toHaveBeenCalledTimes(1)
      expect(spy.mock.calls[0]![0]).toContain('commands.deny "script:test" names no workspace script (the workspace has none)')
    } finally {
      spy.mockRestore()
    }
  })
})
