import { describe, expect, it } from 'vitest'
import { SandboxPathError, shellJoin, shellQuote, toSandboxPath, toWorkspaceRelative } from '../../src/index.js'

describe('toWorkspaceRelative', () => {
  const root = '/srv/sbx/abc/workspace'
  it('maps relative, virtual and real absolute paths', () => {
    expect(toWorkspaceRelative('src/a.ts', root)).toBe('src/a.ts')
    expect(toWorkspaceRelative('/workspace/src/a.ts', root)).toBe('src/a.ts')
    expect(toWorkspaceRelative(`${root}/src/a.ts`, root)).toBe('src/a.ts')
    expect(toWorkspaceRelative('/workspace', root)).toBe('')
    expect(toWorkspaceRelative('./a/../b', root)).toBe('b')
    expect(toSandboxPath('/workspace/x', root)).toBe(`${root}/x`)
  })

  it('refuses escapes and malformed paths', () => {
    for (const bad of ['../x', 'a/../../x', '/etc/passwd', '/workspace/../x', '/workspacex/a', `${root}/../x`]) {
      expect(() => toWorkspaceRelative(bad, root), bad).toThrow(SandboxPathError)
    }
    expect(() => toWorkspaceRelative('', root)).toThrow(/non-empty/)
    expect(() => toWorkspaceRelative('a\0b', root)).toThrow(SandboxPathError)
  })
})

describe('shellQuote', () => {
  it('round-trips through a real shell', async () => {
    const { execFileSync } = await import('node:child_process')
    const values = ['plain', '', "it's", 'a b', '$HOME', '`x`', '"q"', 'new\nline', '*']
    const out = execFileSync('/bin/sh', ['-c', `printf '%s\\0' ${shellJoin(values)}`], { encoding: 'utf8' })
    expect(out.split('\0').slice(0, -1)).toEqual(values)
    expect(shellQuote('safe-word_1.2')).toBe('safe-word_1.2')
  })
})
