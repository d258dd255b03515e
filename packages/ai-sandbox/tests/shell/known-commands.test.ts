/**
 * The tool knowledge behind the policy judge: wrapper options, shell option
 * forms, command strings, git's global options and rm's flag sets.
 */
import { describe, expect, it } from 'vitest'
import { commandOption, flagsCover, readOptions, shellScript, withoutGitGlobalOptions, WRAPPERS } from '../../src/shell/known-commands.js'

describe('readOptions', () => {
  it('reads getopt options up to the first operand, with values joined or apart', () => {
    expect(readOptions(['-u', 'root', '-E', 'git', 'push'], WRAPPERS.sudo!)).toEqual({ rest: ['git', 'push'], values: [['u', 'root']], flags: ['E'] })
    expect(readOptions(['-iuHOME', '--chdir=/x', '--split', 'a b', '--ignore-environment', 'x'], WRAPPERS.env!)).toEqual({ rest: ['x'], values: [['u', 'HOME'], ['chdir', '/x'], ['split-string', 'a b']], flags: ['i', 'ignore-environment'] })
    expect(readOptions(['-', '--', '-x'], WRAPPERS.env!).rest).toEqual(['-x'])
  })
})

describe('shellScript', () => {
  it('finds an inline script after any option form', () => {
    for (const args of [['-O', 'extglob', '-c', 'S'], ['+O', 'extglob', '-c', 'S'], ['-o', 'posix', '-c', 'S'], ['-lc', 'S'], ['-ec', 'S'], ['--norc', '--login', '-c', 'S'], ['-c', '-x', 'S', 'name']]) {
      expect(shellScript('bash', args), args.join(' ')).toMatchObject({ inline: expect.arrayContaining(['S']) })
    }
    expect(shellScript('fish', ['--command=S'])).toEqual({ inline: ['S'] })
  })

  it('tells a named script file from stdin', () => {
    expect(shellScript('bash', ['-o', 'pipefail', './build.sh'])).toBe('file')
    expect(shellScript('bash', ['-O', 'extglob'])).toBe('stdin')
    expect(shellScript('sh', ['-s', 'arg'])).toBe('stdin')
    expect(shellScript('sh', ['--'])).toBe('stdin')
  })
})

describe('commandOption', () => {
  it('finds -c and --command anywhere', () => {
    expect(commandOption(['-qc', 'git push', '/dev/null'])).toBe('git push')
    expect(commandOption(['root', '-c', 'x'])).toBe('x')
    expect(commandOption(['--command=x'])).toBe('x')
    expect(commandOption(['-q', 'file'])).toBeUndefined()
  })
})

describe('withoutGitGlobalOptions', () => {
  it('drops options before the subcommand, with their values', () => {
    expect(withoutGitGlobalOptions(['git', '-C', '.', '-c', 'a=b', '--no-pager', '--git-dir=x', 'push', '-f'])).toEqual(['git', 'push', '-f'])
    expect(withoutGitGlobalOptions(['git', 'push'])).toBeUndefined()
  })
})

describe('flagsCover', () => {
  const exact = (rule: string, operands: string) => rule === operands || rule === '*'
  it('treats a rule\'s rm flags as a set the command must hold', () => {
    for (const form of ['rm -fr x', 'rm -Rf x', 'rm -r -f x', 'rm --recursive --force x', 'rm -rfv x', 'rm x -rf']) expect(flagsCover('rm -rf *', form, exact), form).toBe(true)
    expect(flagsCover('rm -rf *', 'rm -r x', exact)).toBe(false)
    expect(flagsCover('rm -rf *', 'rm -- -rf', exact)).toBe(false)
    expect(flagsCover('git push -f', 'git push --force', exact), 'only programs with a flag table').toBe(false)
  })
})
