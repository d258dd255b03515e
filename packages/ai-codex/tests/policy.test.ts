/**
 * The sandbox policy mapped onto Codex's sandbox mode, approval policy and
 * execpolicy prefix rules, with a warning for every rule Codex cannot enforce
 * as written.
 */
import { describe, expect, it } from 'vitest'
import { defineSandboxPolicy } from '@tanstack/ai-sandbox'
import { codexPolicySettings, globToPrefix } from '../src/index.js'

const rule = (words: string[], decision: string, source: string, glob: string) =>
  `prefix_rule(pattern=[${words.map((w) => JSON.stringify(w)).join(', ')}], decision="${decision}", justification=${JSON.stringify(`sandbox policy: ${source} ${JSON.stringify(glob)}`)})\n`

describe('codexPolicySettings', () => {
  it('bypasses Codex sandbox and approvals under the default policy on an isolated provider (the sandbox provider is the boundary)', () => {
    expect(codexPolicySettings(defineSandboxPolicy(), { isolated: true })).toEqual({ bypassSandbox: true, config: [], rules: '', warnings: [] })
    expect(codexPolicySettings(defineSandboxPolicy({ default: 'allow' }), { isolated: true }).bypassSandbox).toBe(true)
  })

  it('never bypasses on a provider that does not promise isolation: Codex keeps workspace-write, network per the policy, no approvals', () => {
    for (const options of [{}, { isolated: false }]) {
      expect(codexPolicySettings(defineSandboxPolicy(), options)).toEqual({ bypassSandbox: false, sandboxMode: 'workspace-write', config: ['sandbox_mode="workspace-write"', 'approval_policy="never"', 'sandbox_workspace_write.network_access=true'], rules: '', warnings: [] })
    }
    expect(codexPolicySettings(defineSandboxPolicy({ capabilities: { network: false } })).config).toEqual(['sandbox_mode="workspace-write"', 'approval_policy="never"', 'web_search="disabled"'])
  })

  it('runs read-only with approvals never for ask, deny, or no file writes', () => {
    for (const input of [{ default: 'ask' as const }, { default: 'deny' as const }, { capabilities: { fileWrite: false } }]) {
      expect(codexPolicySettings(defineSandboxPolicy(input)), JSON.stringify(input)).toEqual({ bypassSandbox: false, sandboxMode: 'read-only', config: ['sandbox_mode="read-only"', 'approval_policy="never"'], rules: '', warnings: [] })
    }
  })

  it('turns off web search when network is off', () => {
    expect(codexPolicySettings(defineSandboxPolicy({ capabilities: { network: false } }), { isolated: true }).config).toEqual(['web_search="disabled"'])
  })

  it('forbids deny and ask rules, also under the bypass', () => {
    const settings = codexPolicySettings(defineSandboxPolicy({ commands: { deny: ['git push *'], ask: ['npm publish'] } }), { isolated: true })
    expect(settings.bypassSandbox).toBe(true)
    expect(settings.rules).toBe(rule(['git', 'push'], 'forbidden', 'commands.deny', 'git push *') + rule(['npm', 'publish'], 'forbidden', 'commands.ask', 'npm publish'))
    expect(settings.warnings).toEqual([])
  })

  it('allows allow-listed commands only when Codex sandboxes the rest (they run outside its sandbox)', () => {
    expect(codexPolicySettings(defineSandboxPolicy({ commands: { allow: ['npm test *'] } }), { isolated: true }).rules).toBe('')
    expect(codexPolicySettings(defineSandboxPolicy({ default: 'deny', commands: { allow: ['npm test *', 'git status'] } })).rules).toBe(rule(['npm', 'test'], 'allow', 'commands.allow', 'npm test *') + rule(['git', 'status'], 'allow', 'commands.allow', 'git status'))
  })

  it('warns about every rule it cannot enforce as written', () => {
    const settings = codexPolicySettings(defineSandboxPolicy({ default: 'deny', commands: { deny: ['rm -rf /*', '* --force', 'script:deploy', 'echo "hi" > x'], allow: ['git log --grep=*x'] } }))
    expect(settings.rules).toBe(rule(['rm', '-rf'], 'forbidden', 'commands.deny', 'rm -rf /*'))
    expect(settings.warnings).toEqual([
      'commands.deny "rm -rf /*" is enforced by Codex as every command starting with "rm -rf".',
      expect.stringContaining('commands.deny "* --force" cannot be expressed as a Codex prefix rule'),
      'commands.deny "script:deploy" names no workspace script (the workspace has none); Codex does not get this rule.',
      expect.stringContaining('commands.deny "echo "hi" > x" cannot be expressed'),
      expect.stringContaining('commands.allow "git log --grep=*x" has a wildcard before its end'),
    ])
  })
})

describe('codexPolicySettings with workspace scripts', () => {
  const scripts = { test: 'vitest run', check: 'tsc --noEmit && eslint .', publish: 'node publish.js' }

  it('expands a script rule to prefix rules for its command and the package-manager forms', () => {
    const settings = codexPolicySettings(defineSandboxPolicy({ commands: { deny: ['script:publish'] } }), { scripts })
    const forms = [['node', 'publish.js'], ['npm', 'run', 'publish'], ['pnpm', 'run', 'publish'], ['yarn', 'run', 'publish'], ['bun', 'run', 'publish']]
    expect(settings.rules).toBe(forms.map((words) => rule(words, 'forbidden', 'commands.deny', 'script:publish')).join(''))
    expect(settings.warnings).toEqual([])
  })

  it('allows a script under a read-only run, its command taken literally', () => {
    const settings = codexPolicySettings(defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:lint'] } }), { scripts: { lint: 'eslint src/*.ts' } })
    expect(settings.rules.split('\n')[0]).toBe(rule(['eslint', 'src/*.ts'], 'allow', 'commands.allow', 'script:lint').trimEnd())
    expect(settings.warnings).toEqual([])
  })

  it('keeps the package-manager forms and warns when the script\'s command cannot be a prefix rule', () => {
    const settings = codexPolicySettings(defineSandboxPolicy({ commands: { ask: ['script:check'] } }), { scripts })
    expect(settings.rules).toBe([['npm', 'run', 'check'], ['pnpm', 'run', 'check'], ['pnpm', 'check'], ['yarn', 'run', 'check'], ['bun', 'run', 'check']].map((words) => rule(words, 'forbidden', 'commands.ask', 'script:check')).join(''))
    expect(settings.warnings).toEqual([expect.stringContaining('commands.ask "script:check": the script\'s command "tsc --noEmit && eslint ." cannot be expressed as a Codex prefix rule')])
  })

  it('warns about a script the workspace does not have', () => {
    expect(codexPolicySettings(defineSandboxPolicy({ commands: { deny: ['script:deploy'] } }), { scripts }).warnings).toEqual([
      'commands.deny "script:deploy" names no workspace script (the workspace has test, check, publish); Codex does not get this rule.',
    ])
  })
})

describe('globToPrefix', () => {
  it('is exact for a trailing *, widened otherwise', () => {
    expect(globToPrefix('git push *')).toEqual({ prefix: ['git', 'push'], widened: false })
    expect(globToPrefix('git  push   origin')).toEqual({ prefix: ['git', 'push', 'origin'], widened: true })
    expect(globToPrefix('git push origin-?')).toEqual({ prefix: ['git', 'push'], widened: true })
    expect(globToPrefix('*')).toBeUndefined()
  })
})
