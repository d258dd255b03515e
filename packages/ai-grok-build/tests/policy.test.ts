/** The sandbox policy → approve flag and permission answers. */
import { describe, expect, it } from 'vitest'
import { defineSandboxPolicy } from '@tanstack/ai-sandbox'
import { decideGrokPermission, grokPermissionVerdict, grokPolicySettings } from '../src/index.js'

const OPTIONS = [
  { optionId: 'a1', kind: 'allow_once', name: 'Allow' },
  { optionId: 'a2', kind: 'allow_always', name: 'Always' },
  { optionId: 'r1', kind: 'reject_once', name: 'Reject' },
  { optionId: 'r2', kind: 'reject_always', name: 'Never' },
]

describe('grokPolicySettings', () => {
  it('passes the approve flag only for a policy that allows everything', () => {
    expect(grokPolicySettings(defineSandboxPolicy()).autoApprove).toBe(true)
    expect(grokPolicySettings(defineSandboxPolicy({ commands: { allow: ['ls'] } })).autoApprove).toBe(true)
    expect(grokPolicySettings(defineSandboxPolicy({ commands: { deny: ['git push *'] } })).autoApprove).toBe(false)
    expect(grokPolicySettings(defineSandboxPolicy({ commands: { ask: ['npm publish*'] } })).autoApprove).toBe(false)
    expect(grokPolicySettings(defineSandboxPolicy({ default: 'ask' })).autoApprove).toBe(false)
    expect(grokPolicySettings(defineSandboxPolicy({ capabilities: { network: false } })).autoApprove).toBe(false)
  })
})

describe('permission answers', () => {
  const policy = defineSandboxPolicy({ default: 'allow', commands: { deny: ['git push *'], ask: ['npm publish*'] }, capabilities: { network: false } })

  it('evaluates shell commands from rawInput (command, cmd, argv)', () => {
    expect(grokPermissionVerdict(policy, { kind: 'execute', rawInput: { command: 'git push origin main' } })).toBe('deny')
    expect(grokPermissionVerdict(policy, { kind: 'execute', rawInput: { cmd: ['npm', 'publish', '--tag', 'x'] } })).toBe('ask')
    expect(grokPermissionVerdict(policy, { kind: 'execute', rawInput: 'ls -la' })).toBe('allow')
    expect(grokPermissionVerdict(defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:test'] } }), { kind: 'execute', rawInput: { command: 'pnpm test' } }, { test: 'vitest run' })).toBe('allow')
    expect(grokPermissionVerdict(defineSandboxPolicy({ default: 'deny' }), { kind: 'execute', rawInput: {} }), 'no command: the default').toBe('deny')
  })

  it('judges every simple command of a compound line, so a compound command cannot slip past a rule', () => {
    expect(grokPermissionVerdict(policy, { kind: 'execute', rawInput: { command: 'true && git push origin main' } })).toBe('deny')
    expect(grokPermissionVerdict(policy, { kind: 'execute', rawInput: { command: 'git push' } }), 'a trailing " *" covers the bare command').toBe('deny')
    const onlyLs = defineSandboxPolicy({ default: 'deny', commands: { allow: ['ls *'] } })
    expect(grokPermissionVerdict(onlyLs, { kind: 'execute', rawInput: { command: 'ls -la; rm -rf ~' } })).toBe('deny')
    expect(grokPermissionVerdict(onlyLs, { kind: 'execute', rawInput: { command: 'ls $(rm -rf ~)' } })).toBe('deny')
    expect(grokPermissionVerdict(onlyLs, { kind: 'execute', rawInput: { command: 'ls -la | ls' } })).toBe('allow')
  })

  it('quotes an argv back into one line, so a shell script stays one word', () => {
    expect(grokPermissionVerdict(policy, { kind: 'execute', rawInput: { command: ['bash', '-c', 'ls; git push origin'] } })).toBe('deny')
    const onlyEcho = defineSandboxPolicy({ default: 'deny', commands: { allow: ['echo *'] } })
    expect(grokPermissionVerdict(onlyEcho, { kind: 'execute', rawInput: { cmd: ['echo', 'a; rm -rf ~'] } })).toBe('allow')
    expect(grokPermissionVerdict(onlyEcho, { kind: 'execute', rawInput: { cmd: [] } }), 'an empty argv: the default').toBe('deny')
  })

  it('gates file writes and network by capability, always allows read-only kinds', () => {
    expect(grokPermissionVerdict(policy, { kind: 'fetch' })).toBe('deny')
    expect(grokPermissionVerdict(policy, { kind: 'edit' })).toBe('allow')
    const readOnly = defineSandboxPolicy({ default: 'deny', capabilities: { fileWrite: false } })
    for (const kind of ['edit', 'delete', 'move', 'other']) expect(grokPermissionVerdict(readOnly, { kind }), kind).toBe('deny')
    for (const kind of ['read', 'search', 'think', 'switch_mode']) expect(grokPermissionVerdict(readOnly, { kind }), kind).toBe('allow')
    expect(grokPermissionVerdict(defineSandboxPolicy({ default: 'ask' }), undefined)).toBe('ask')
  })

  it('picks the one-time option, the always option only when there is no one-time one, else cancels', () => {
    expect(decideGrokPermission(policy, { toolCall: { kind: 'edit' }, options: OPTIONS })).toEqual({ outcome: { outcome: 'selected', optionId: 'a1' } })
    expect(decideGrokPermission(policy, { toolCall: { kind: 'fetch' }, options: OPTIONS })).toEqual({ outcome: { outcome: 'selected', optionId: 'r1' } })
    expect(decideGrokPermission(policy, { toolCall: { kind: 'execute', rawInput: { command: 'npm publish' } }, options: OPTIONS }), 'ask is refused headless').toEqual({ outcome: { outcome: 'selected', optionId: 'r1' } })
    expect(decideGrokPermission(policy, { toolCall: { kind: 'edit' }, options: OPTIONS.slice(1) })).toEqual({ outcome: { outcome: 'selected', optionId: 'a2' } })
    expect(decideGrokPermission(policy, { toolCall: { kind: 'fetch' }, options: OPTIONS.slice(0, 2) })).toEqual({ outcome: { outcome: 'cancelled' } })
    expect(decideGrokPermission(policy, {})).toEqual({ outcome: { outcome: 'cancelled' } })
  })
})
