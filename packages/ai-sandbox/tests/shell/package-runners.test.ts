/**
 * The package-manager knowledge behind the policy judge: the command each
 * runner runs after its own options, and the command lines of its shell modes.
 */
import { describe, expect, it } from 'vitest'
import { packageRun } from '../../src/shell/package-runners.js'

const run = (line: string) => {
  const [program, ...args] = line.split(' ')
  return packageRun(program!, args)
}

describe('packageRun', () => {
  it('finds the command after each runner\'s options', () => {
    const cases: [string, string[]][] = [
      ['npx -y -p a git push', ['git', 'push']],
      ['npm --prefix /x exec --package=a -- git push', ['git', 'push']],
      ['pnpm -C /x --filter web -r exec git push', ['git', 'push']],
      ['pnpm exec -- git push', ['git', 'push']],
      ['pnpm dlx --package a git push', ['git', 'push']],
      ['pnpx git push', ['git', 'push']],
      ['pnpm eslint .', ['eslint', '.']],
      ['yarn --cwd /x dlx -p a git push', ['git', 'push']],
      ['yarn workspace web dlx git push', ['git', 'push']],
      ['yarn workspaces foreach -A -j 2 dlx git push', ['git', 'push']],
      ['bunx --bun -p a git push', ['git', 'push']],
      ['bun run --filter web git push', ['git', 'push']],
      ['corepack pnpm@9.1.0 exec git push', ['pnpm', 'exec', 'git', 'push']],
    ]
    for (const [line, command] of cases) expect(run(line), line).toEqual({ command })
  })

  it('returns the command line of a shell mode', () => {
    expect(run('npx -c git')).toEqual({ command: [], script: 'git' })
    expect(run('npm exec --call=x')).toEqual({ command: [], script: 'x' })
    expect(run('pnpm -c exec git push')).toEqual({ command: ['git', 'push'], script: 'git push' })
    expect(run('pnpm dlx --shell-mode a b')).toEqual({ command: ['a', 'b'], script: 'a b' })
    expect(run('bun exec a b')).toEqual({ command: [], script: 'a b' })
    expect(run('yarn exec git push')).toEqual({ command: ['git', 'push'], script: 'git' })
  })

  it('runs nothing for the managers\' own commands and other programs', () => {
    for (const line of ['pnpm install', 'pnpm rm -rf x', 'npm test', 'npm run build', 'yarn add x', 'bun test', 'bun rm x', 'corepack enable', 'git push', 'pnpm', 'yarn exec']) {
      expect(run(line), line).toBeUndefined()
    }
  })
})
