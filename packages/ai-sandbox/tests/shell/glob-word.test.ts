/**
 * Glob and brace words: the marks the line reader writes for unquoted
 * pattern characters, brace expansion over them, and the overlap test deny
 * rules use against a glob word.
 */
import { describe, expect, it } from 'vitest'
import { expandBraces } from '../../src/shell/brace-expansion.js'
import { splitCommandLine } from '../../src/shell/command-line.js'
import { globsOverlap } from '../../src/shell/glob-overlap.js'
import { GLOB_STAR, plainWord } from '../../src/shell/glob-word.js'

const plain = (line: string) => splitCommandLine(line).commands.map((words) => words.map(plainWord))

describe('brace expansion on the line', () => {
  it('expands unquoted comma lists and ranges, as bash does, and marks the line opaque', () => {
    const cases: [string, string[][]][] = [
      ['{git,push}', [['git', 'push']]],
      ['git{,} push', [['git', 'git', 'push']]],
      ['echo a{b,c{d,e}}f', [['echo', 'abf', 'acdf', 'acef']]],
      ['echo {1..3} {c..a} {0..6..3}', [['echo', '1', '2', '3', 'c', 'b', 'a', '0', '3', '6']]],
      // bash pads to a zero-padded end's width (seen: bash 5.2 prints the same words)
      ['echo {01..03} {1..010..3} {-01..1} {05..3} {a..e..2} {0..3}', [['echo', '01', '02', '03', '001', '004', '007', '010', '-01', '000', '001', '05', '04', '03', 'a', 'c', 'e', '0', '1', '2', '3']]],
    ]
    for (const [line, words] of cases) {
      expect(plain(line), line).toEqual(words)
      expect(splitCommandLine(line).opaque, line).toBe(true)
    }
  })

  it('leaves quoted braces, parameter expansions and braces that form no expression alone', () => {
    for (const [line, words] of [
      ["echo '{a,b}' \"{c,d}\" \\{e,f\\}", ['echo', '{a,b}', '{c,d}', '{e,f}']],
      ['echo ${HOME} ${A:-x,y}', ['echo', '$HOME', '$A:-x,y']],
      ['echo ${A:-${B}}', ['echo', '$A:-${B}']],
      ['find . -exec echo {} ;', ['find', '.', '-exec', 'echo', '{}']],
      ['git show HEAD@{1} a,b', ['git', 'show', 'HEAD@{1}', 'a,b']],
    ] as const) {
      expect(splitCommandLine(line).commands[0]!.map(plainWord), line).toEqual(words)
    }
    expect(splitCommandLine('git show HEAD@{1} a,b').opaque).toBe(false)
  })

  it('reads an expression too large to expand as a glob', () => {
    expect(expandBraces('\uE003a..z\uE005\uE003a..z\uE005')).toEqual({ words: [GLOB_STAR + GLOB_STAR], expanded: true })
    expect(expandBraces('\uE0031..1000\uE005x').words).toEqual([`${GLOB_STAR}x`])
  })
})

describe('glob words on the line', () => {
  it('marks unquoted *, ? and [ … ] and makes the line opaque; quoted or escaped ones stay literal', () => {
    for (const line of ['git p*sh', 'ls src/?.ts', 'ls [ab]', 'ls --include=*.ts']) expect(splitCommandLine(line).opaque, line).toBe(true)
    for (const line of ["ls '*.ts'", 'ls "?"', 'ls \\*', '[ -f x ]', '[[ -n x ]]', 'ls a]']) expect(splitCommandLine(line).opaque, line).toBe(false)
    expect(plain("ls 'a*' b*")).toEqual([['ls', 'a*', 'b*']])
  })

  it('still sees substitutions inside a parameter expansion', () => {
    expect(splitCommandLine('echo ${x:-$(git push)}').hidden).toEqual(['git push'])
  })

  it('reads $"…" as "…"', () => {
    expect(splitCommandLine('$"git" push $"a b"'), 'opaque: a message catalogue may translate it').toEqual({ commands: [['git', 'push', 'a b']], hidden: [], opaque: true })
  })
})

describe('aliases on the line', () => {
  it('makes the line opaque and hides the alias values and the commands they expand', () => {
    expect(splitCommandLine('alias g=git; g push')).toEqual({ commands: [['alias', 'g=git'], ['g', 'push']], hidden: ['git', 'git push'], opaque: true })
    expect(splitCommandLine("eval 'alias p=\"git push\"'\nA=1 p x").hidden).toEqual(['git push', 'git push x'])
    expect(splitCommandLine('alias').opaque).toBe(true)
    expect(splitCommandLine('git commit -m "alias that"').opaque).toBe(false)
  })
})

describe('globsOverlap', () => {
  it('matches a rule word the glob could expand to, inside one word', () => {
    const S = GLOB_STAR
    expect(globsOverlap('git push *', `git p${S}sh`)).toBe(true)
    expect(globsOverlap('git push *', `git pu\uE001h origin`)).toBe(true)
    expect(globsOverlap('git push *', 'git p\uE002a-z]sh')).toBe(true)
    expect(globsOverlap('git push *', 'git p\uE002!u]sh')).toBe(false)
    expect(globsOverlap('git push *', `git a${S}`)).toBe(false)
    expect(globsOverlap('rm -rf *', `rm ${S}`)).toBe(true) // a file named -rf
    expect(globsOverlap('rm -rf *', `rm ${S}.o`)).toBe(false)
    expect(globsOverlap('git push', `git${S}`)).toBe(false) // a shell glob never spans a space
  })
})
