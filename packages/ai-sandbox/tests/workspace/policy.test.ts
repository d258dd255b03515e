import { describe, expect, it } from 'vitest'
import { defineSandboxPolicy, evaluateCommand, SandboxConfigError } from '../../src/index.js'

describe('defineSandboxPolicy', () => {
  it('fills defaults', () => {
    expect(defineSandboxPolicy()).toEqual({ default: 'allow', commands: { allow: [], ask: [], deny: [] }, capabilities: { fileWrite: true, network: true } })
  })

  it('names the bad field', () => {
    const error = (() => {
      try {
        defineSandboxPolicy({ commands: { deny: [''] } })
      } catch (e) {
        return e as SandboxConfigError
      }
    })()
    expect(error).toBeInstanceOf(SandboxConfigError)
    expect(error?.field).toBe('policy.commands.deny.0')
    expect(() => defineSandboxPolicy({ default: 'maybe' as never })).toThrow(/policy.default/)
    expect(() => defineSandboxPolicy({ paths: {} } as never)).toThrow(/policy.paths/)
  })
})

describe('evaluateCommand', () => {
  const policy = defineSandboxPolicy({
    default: 'ask',
    commands: { allow: ['git *', 'script:test'], ask: ['git push *'], deny: ['git push * --force*', 'rm -rf *'] },
  })
  const scripts = { test: 'vitest run', build: 'tsup' }

  it('anchors globs to the whole command', () => {
    expect(evaluateCommand(policy, 'git status')).toBe('allow')
    expect(evaluateCommand(policy, 'echo git status')).toBe('ask') // not anchored at the start: default
    expect(evaluateCommand(policy, 'rm -rf /tmp/x')).toBe('deny')
    expect(evaluateCommand(policy, 'sudo rm -rf /tmp/x')).toBe('ask')
  })

  it('ranks deny over ask over allow over the default', () => {
    expect(evaluateCommand(policy, 'git push origin main')).toBe('ask')
    expect(evaluateCommand(policy, 'git push origin main --force')).toBe('deny')
    expect(evaluateCommand(policy, 'ls')).toBe('ask')
    expect(evaluateCommand(defineSandboxPolicy({ default: 'deny' }), 'ls')).toBe('deny')
  })

  it('collapses whitespace and treats glob metacharacters literally otherwise', () => {
    expect(evaluateCommand(policy, '  git    log  ')).toBe('allow')
    const literal = defineSandboxPolicy({ default: 'deny', commands: { allow: ['echo (a|b).c?'] } })
    expect(evaluateCommand(literal, 'echo (a|b).cd')).toBe('allow')
    expect(evaluateCommand(literal, 'echo a.cd')).toBe('deny')
  })

  it('knows workspace scripts by name', () => {
    expect(evaluateCommand(policy, 'pnpm test', { scripts })).toBe('allow')
    expect(evaluateCommand(policy, 'npm run test', { scripts })).toBe('allow')
    expect(evaluateCommand(policy, 'vitest run', { scripts })).toBe('allow')
    expect(evaluateCommand(policy, 'pnpm build', { scripts })).toBe('ask')
    const denyBuild = defineSandboxPolicy({ commands: { deny: ['tsup*'] } })
    expect(evaluateCommand(denyBuild, 'pnpm build', { scripts }), "a script is also judged by its own command").toBe('deny')
  })
})
