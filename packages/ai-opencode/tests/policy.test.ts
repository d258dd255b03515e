/**
 * The sandbox policy mapped onto OpenCode's `permission` setting, and the
 * mapped rules judged the way OpenCode judges them (last matching pattern
 * wins, `*` any run, a trailing ` *` also matching the bare command), so the
 * precedence claims are checked, not just the shapes.
 */
import { describe, expect, it, vi } from 'vitest'
import { defineSandboxPolicy, evaluateCommand } from '@tanstack/ai-sandbox'
import { mergePermission, opencodePermission, type OpencodePermission } from '../src/index.js'

/** OpenCode's wildcard (1.18.x): anchored, `*` any run, `?` one character, a trailing ` *` optional. */
function wildcard(text: string, pattern: string): boolean {
  let body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')
  if (body.endsWith(' .*')) body = `${body.slice(0, -3)}( .*)?`
  return new RegExp(`^${body}$`, 's').test(text)
}

/** How OpenCode decides one simple bash command under a `permission` object. */
function judge(permission: OpencodePermission, command: string): string | undefined {
  const bash = permission.bash
  if (typeof bash !== 'object') return bash
  return Object.entries(bash).filter(([pattern]) => wildcard(command, pattern)).at(-1)?.[1]
}

describe('opencodePermission', () => {
  it('maps the default verdict onto the bash fallback, an ask to deny, and nothing else', () => {
    expect(opencodePermission(defineSandboxPolicy())).toEqual({ bash: { '*': 'allow' } })
    expect(opencodePermission(defineSandboxPolicy({ default: 'ask' }))).toEqual({ bash: { '*': 'deny' } })
    expect(opencodePermission(defineSandboxPolicy({ default: 'deny' }))).toEqual({ bash: { '*': 'deny' } })
  })

  it('orders patterns default, allow, ask, deny, so the last match gives core\'s precedence', () => {
    const policy = defineSandboxPolicy({ default: 'deny', commands: { allow: ['git *', 'npm test'], ask: ['git push *'], deny: ['git push --force *'] } })
    const permission = opencodePermission(policy)
    expect(permission).toEqual({ bash: { '*': 'deny', 'git *': 'allow', 'npm test': 'allow', 'git push *': 'deny', 'git push --force *': 'deny' } })
    for (const command of ['git status', 'npm test', 'git push origin main', 'git push --force origin', 'rm -rf /', 'npm install']) {
      const core = evaluateCommand(policy, command)
      expect(judge(permission, command), command).toBe(core === 'allow' ? 'allow' : 'deny')
    }
  })

  it('lets deny win when one glob is in several lists', () => {
    expect(opencodePermission(defineSandboxPolicy({ commands: { allow: ['curl *'], deny: ['curl *'] } })).bash).toEqual({ '*': 'allow', 'curl *': 'deny' })
  })

  it('expands script patterns to the script and the package-manager forms that run it', () => {
    const warn = vi.fn()
    const permission = opencodePermission(defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:test', 'script:missing'] } }), { test: 'vitest  run' }, { warn })
    expect(Object.keys(permission.bash as object)).toEqual(['*', 'vitest run', 'npm run test', 'npm test', 'pnpm run test', 'pnpm test', 'yarn run test', 'yarn test', 'bun run test'])
    expect(judge(permission, 'pnpm test')).toBe('allow')
    expect(judge(permission, 'vitest run')).toBe('allow')
    expect(judge(permission, 'pnpm build')).toBe('deny')
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]![0]).toContain('commands.allow "script:missing" names no workspace script (the workspace has test)')
  })

  it('does not allow a package manager\'s own command through a script of the same name', () => {
    const permission = opencodePermission(defineSandboxPolicy({ default: 'deny', commands: { allow: ['script:publish', 'script:build'] } }), { publish: 'node publish.js', build: 'tsup' })
    expect(judge(permission, 'npm run publish')).toBe('allow')
    expect(judge(permission, 'pnpm publish')).toBe('deny')
    expect(judge(permission, 'npm publish')).toBe('deny')
    expect(judge(permission, 'npm build'), 'npm runs only test/start/stop/restart without run').toBe('deny')
    expect(judge(permission, 'pnpm build')).toBe('allow')
  })

  it('warns on console by default, once per mapping', () => {
    const spy = vi.spyOn(console, 'warn').mockImplementation(() => {})
    try {
      opencodePermission(defineSandboxPolicy({ commands: { deny: ['script:a', 'script:b'] } }))
      expect(spy).toHaveBeenCalledTimes(1)
      expect(spy.mock.calls[0]![0]).toContain('commands.deny "script:a", commands.deny "script:b" name no workspace script (the workspace has none)')
    } finally {
      spy.mockRestore()
    }
  })

  it('closes the file-write and network gates with OpenCode\'s own keys', () => {
    expect(opencodePermission(defineSandboxPolicy({ capabilities: { fileWrite: false, network: false } }))).toEqual({ bash: { '*': 'allow' }, edit: 'deny', webfetch: 'deny', websearch: 'deny' })
  })

  it('lets a trailing " *" match the bare command too, as core does', () => {
    const policy = defineSandboxPolicy({ commands: { deny: ['git push *'] } })
    expect(evaluateCommand(policy, 'git push')).toBe('deny')
    expect(judge(opencodePermission(policy), 'git push')).toBe('deny')
  })
})

describe('mergePermission', () => {
  it('replaces actions, merges pattern objects with the extra patterns last, and copies', () => {
    const base: OpencodePermission = { bash: { '*': 'deny', 'ls *': 'deny' }, edit: 'allow' }
    const merged = mergePermission(base, { bash: { 'ls *': 'allow', 'cat *': 'allow' }, edit: 'deny', webfetch: { '*': 'deny' } })
    expect(merged).toEqual({ bash: { '*': 'deny', 'ls *': 'allow', 'cat *': 'allow' }, edit: 'deny', webfetch: { '*': 'deny' } })
    expect(Object.keys(merged.bash as object)).toEqual(['*', 'ls *', 'cat *'])
    expect(base).toEqual({ bash: { '*': 'deny', 'ls *': 'deny' }, edit: 'allow' })
    expect(mergePermission({ bash: 'allow' }, { bash: { 'rm *': 'deny' } })).toEqual({ bash: { 'rm *': 'deny' } })
  })
})
